"""Bad raw tracking files and Kimodo files through ``kinefit ingest`` / ``export kimodo``:
exit status 1, one message naming the file and what is wrong, no store created, and an
existing store at the destination left byte-for-byte unchanged (``--overwrite``)."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from flows.cli import app
from tests.fixtures.reliability_helpers import assert_unchanged, snapshot
from tests.fixtures.shared_data import KIMODO

runner = CliRunner()
SKELETONS = KIMODO / "skeletons.json"


def _npz(path, **arrays):
    base = {"position": np.zeros((6, 2, 3)), "keypoints": np.array(["a", "b"])}
    np.savez(path, **{**base, **arrays})


def _pos(**changes):
    position = np.random.default_rng(0).normal(size=(6, 2, 3))
    for index, value in changes.items():
        position[tuple(int(i) for i in index[1:].split("_"))] = value
    return position


def _long_csv(rows):
    return "frame,keypoint,x,y,z\n" + "\n".join(rows) + "\n"


def _dlc(path, bodyparts=("snout", "tail")):
    columns = pd.MultiIndex.from_product(
        [["DLC"], list(bodyparts), ["x", "y", "likelihood"]],
        names=["scorer", "bodyparts", "coords"],
    )
    pd.DataFrame(np.ones((4, len(columns))), columns=columns).to_csv(path)


# (id, file name, writer(path), regex of the message after the path)
RAW = [
    (
        "npz-position-2d",
        "s.npz",
        lambda p: _npz(p, position=np.zeros((6, 2))),
        r"position: expected \(n_frames, \[n_individuals,\] n_keypoints, 2\|3\), "
        r"got shape \(6, 2\)",
    ),
    (
        "npz-four-coordinates",
        "s.npz",
        lambda p: _npz(p, position=np.zeros((6, 2, 4))),
        r"position: expected",
    ),
    (
        "npz-names-mismatch",
        "s.npz",
        lambda p: _npz(p, keypoints=np.array(["a"])),
        r"keypoints: 1 names for 2 keypoints",
    ),
    (
        "npz-duplicate-keypoints",
        "s.npz",
        lambda p: _npz(p, keypoints=np.array(["a", "a"])),
        r"keypoint: duplicated names \['a'\]",
    ),
    (
        "npz-infinite",
        "s.npz",
        lambda p: _npz(p, position=_pos(i3_1_2=np.inf)),
        r"field 'position': 1 infinite value\(s\) \(first at frame 3\)",
    ),
    (
        "npz-infinite-confidence",
        "s.npz",
        lambda p: _npz(p, position=_pos(), confidence=np.full((6, 2), np.inf)),
        r"field 'confidence': 12 infinite value",
    ),
    (
        "npz-time-backwards",
        "s.npz",
        lambda p: _npz(p, position=_pos(), time=np.array([0, 1, 2, 1.5, 4, 5.0])),
        r"time: not monotonic increasing \(first decrease at index 3\)",
    ),
    (
        "npz-time-repeated",
        "s.npz",
        lambda p: _npz(p, position=_pos(), time=np.array([0, 1, 1, 2, 3, 4.0])),
        r"time: duplicated time stamps",
    ),
    (
        "npz-confidence-shape",
        "s.npz",
        lambda p: _npz(p, confidence=np.ones((6, 3))),
        r"confidence: expected shape",
    ),
    (
        "npz-unknown-array",
        "s.npz",
        lambda p: _npz(p, positions=np.zeros(3)),
        r"unknown arrays \['positions'\]",
    ),
    (
        "csv-truncated-row",
        "s.csv",
        lambda p: p.write_text(_long_csv(["0,a,1,2,3", "0,b,1,2", "1,a,1,2,3"])),
        r"header says 5 columns, row 3 has 4",
    ),
    (
        "csv-duplicate-row",
        "s.csv",
        lambda p: p.write_text(_long_csv(["0,a,1,2,3", "0,a,1,2,3"])),
        r"duplicate",
    ),
    (
        "csv-not-a-number",
        "s.csv",
        lambda p: p.write_text(_long_csv(["0,a,1,2,3", "1,a,x,2,3"])),
        r"not a number|x",
    ),
    (
        "csv-frame-gap",
        "s.csv",
        lambda p: p.write_text(_long_csv(["0,a,1,2,3", "1000000000,a,1,2,3"])),
        r"column 'frame' spans 1000000001 frames \(0 to 1000000000\) but only 2",
    ),
    (
        "dlc-duplicate-bodyparts",
        "m_DLC.csv",
        lambda p: _dlc(p, ("snout", "snout")),
        r"bodypart 'snout' has the coord 'x' twice",
    ),
    ("empty-file", "s.csv", lambda p: p.write_text(""), r"."),
    ("binary-garbage", "s.csv", lambda p: p.write_bytes(b"\x00\xff" * 100), r"."),
    (
        "unknown-suffix",
        "s.xyz",
        lambda p: p.write_text("1 2 3\n"),
        r"cannot tell the tracks format \(unknown suffix '\.xyz'\)",
    ),
]


@pytest.fixture(scope="module")
def root(fly_tracks, tmp_path_factory):
    from pipeline.store import write_tracks

    root = tmp_path_factory.mktemp("ingest")
    write_tracks(fly_tracks, root / "existing.zarr", chunk_frames=20)
    return root


def _one_error(result, match):
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())
    assert text.count("error:") == 1 and "Traceback" not in text, text
    assert re.search(match, text), (match, text)


@pytest.mark.parametrize("name, write, match", [c[1:] for c in RAW], ids=[c[0] for c in RAW])
def test_ingest_refuses_bad_raw_file(root, request, name, write, match):
    raw = root / request.node.callspec.id / name
    raw.parent.mkdir(exist_ok=True)
    write(raw)
    before = snapshot(root, digest=True)
    for out, extra in [(root / "new.zarr", []), (root / "existing.zarr", ["--overwrite"])]:
        result = runner.invoke(app, ["ingest", str(raw), "-o", str(out), "--fps", "30", *extra])
        _one_error(result, re.escape(str(raw)) + r".*" + match)
    assert_unchanged(before, root)


def _kimodo_entry(frames, n_joints=30, **extra):
    return {
        "type": "fullbody",
        "frame_indices": frames,
        "local_joints_rot": [[[0.0, 0.0, 0.0]] * n_joints for _ in frames],
        "root_positions": [[0.0, 1.0, 0.1 * f] for f in frames],
        "smooth_root_2d": [[0.0, 0.1 * f] for f in frames],
        **extra,
    }


KIMODO_CASES = [
    ("not-json", "[{", r"."),
    ("wrong-joint-count", [_kimodo_entry([0, 5], n_joints=25)], r"local_joints_rot"),
    ("unknown-type", [{**_kimodo_entry([0]), "type": "fulbody"}], r"'fulbody' is not one of"),
    ("negative-frame", [_kimodo_entry([-1])], r"frame_indices"),
    (
        "nan-rotation",
        [_kimodo_entry([0], local_joints_rot=[[[float("nan")] * 3] * 30])],
        r"local_joints_rot",
    ),
    (
        "rows-not-matching-frames",
        [_kimodo_entry([0, 5], root_positions=[[0.0, 1.0, 0.0]])],
        r"root_positions",
    ),
]


@pytest.mark.parametrize(
    "content, match", [c[1:] for c in KIMODO_CASES], ids=[c[0] for c in KIMODO_CASES]
)
def test_ingest_refuses_bad_kimodo_file(root, request, content, match):
    path = root / f"kimodo-{request.node.callspec.id}.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    before = snapshot(root, digest=True)
    result = runner.invoke(
        app,
        [
            "ingest",
            str(path),
            "-o",
            str(root / "existing.zarr"),
            "--overwrite",
            "--format",
            "kimodo",
            "--skeleton-file",
            str(SKELETONS),
            "--skeleton",
            "somaskel30",
        ],
    )
    _one_error(result, re.escape(str(path)) + r".*" + match)
    assert_unchanged(before, root)


def test_ingest_kimodo_with_unknown_skeleton(root):
    path = root / "kimodo-ok.json"
    path.write_text(json.dumps([_kimodo_entry([0, 5])]))
    before = snapshot(root, digest=True)
    result = runner.invoke(
        app,
        [
            "ingest",
            str(path),
            "-o",
            str(root / "k.zarr"),
            "--format",
            "kimodo",
            "--skeleton-file",
            str(SKELETONS),
            "--skeleton",
            "somaskel31",
        ],
    )
    _one_error(result, r"somaskel31")
    assert_unchanged(before, root)


@pytest.mark.parametrize(
    "fit, extra, match",
    [
        ("existing.zarr", [], r"existing\.zarr.*not a (complete )?kinefit fit store"),
        ("none.zarr", [], r"none\.zarr: no such fit store"),
        ("fit", ["--skeleton", "somaskel31"], r"somaskel31"),
        ("fit", ["--left-hand", "0,x"], r"--left-hand"),
        ("fit", ["--root2d", "sideways"], r"root2d|sideways"),
        ("fit", ["--floor", "ground"], r"--floor: expected 'lowest' or a number"),
    ],
    ids=[
        "tracks-not-fit",
        "missing-fit",
        "unknown-skeleton",
        "bad-frames",
        "bad-root2d",
        "bad-floor",
    ],
)
def test_export_kimodo_refuses_bad_input(root, small_session, fit, extra, match):
    fit_path = small_session[0].parent / "reference.zarr" if fit == "fit" else root / fit
    out = root / "constraints.json"
    out.write_text("[]")  # an existing file: must survive the failed export untouched
    before = snapshot(root, digest=True)
    result = runner.invoke(
        app,
        [
            "export",
            "kimodo",
            str(fit_path),
            "--skeleton-file",
            str(SKELETONS),
            "-o",
            str(out),
            "--overwrite",
            "--name-map",
            "mannequin",
            *extra,
        ],
    )
    _one_error(result, match)
    assert_unchanged(before, root)
