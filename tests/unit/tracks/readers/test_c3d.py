"""C3D marker files written with ezc3d (the optional extra ``c3d``)."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pipeline.tracks import TracksError, read_tracks

ezc3d = pytest.importorskip("ezc3d", reason="C3D files need ezc3d: the 'c3d' extra")

from pipeline.tracks.readers import c3d  # noqa: E402

MARKERS = ("LASI", "RASI", "LTOE")


_WRITER = """
import pickle, sys
import ezc3d
import numpy as np
path, labels, xyz, rate, extra = pickle.load(sys.stdin.buffer)
c = ezc3d.c3d()
c["parameters"]["POINT"]["RATE"]["value"] = [rate]
c["parameters"]["POINT"]["LABELS"]["value"] = tuple(labels)
points = np.ones((4, *xyz.shape[1:]))
points[:3] = xyz
c["data"]["points"] = points
for group, name, value in extra:
    c.add_parameter(group, name, value)
c.write(path)
"""


def write_c3d(path: Path, labels, xyz: np.ndarray, *, rate=200.0, extra=()) -> None:
    """Write markers ``xyz (3, n_points, n_frames)`` with ezc3d, in a fresh process.

    ezc3d's SWIG overloads of ``Parameter.set`` were refused (``TypeError: Wrong number or
    type of arguments``) in a test process that had run other tests before, though never in
    a fresh one; the files are what these tests read, so they are written apart.
    """
    payload = pickle.dumps((str(path), list(labels), np.asarray(xyz), float(rate), list(extra)))
    done = subprocess.run(
        [sys.executable, "-c", _WRITER], input=payload, capture_output=True, check=False
    )
    assert done.returncode == 0, done.stderr.decode()


def two_subjects(rng, n_frames=8):
    labels = [f"{s}:{m}" for s in ("Alice", "Bob") for m in MARKERS] + ["LKneeAngles"]
    xyz = rng.uniform(-1000, 1000, (3, len(labels), n_frames)).round(3)
    xyz[:, 1, 4] = np.nan  # Alice:RASI occluded in frame 4
    extra = [
        ("POINT", "UNITS", "mm"),
        ("POINT", "Y_SCREEN", "+Z"),
        ("POINT", "ANGLES", ["LKneeAngles"]),
        ("SUBJECTS", "NAMES", ["Alice", "Bob"]),
        ("SUBJECTS", "LABEL_PREFIXES", ["Alice:", "Bob:"]),
        ("SUBJECTS", "USES_PREFIXES", 1),
    ]
    return labels, xyz, extra


def test_markers_of_two_subjects_are_read_value_by_value(tmp_path: Path, rng) -> None:
    labels, xyz, extra = two_subjects(rng)
    path = tmp_path / "walk.c3d"
    write_c3d(path, labels, xyz, extra=extra)
    assert c3d.sniff(path)
    ds = read_tracks(path)
    assert list(ds.individual.values) == ["Alice", "Bob"]
    assert list(ds.keypoint.values) == list(MARKERS)  # the knee angle is no marker
    for s, subject in enumerate(("Alice", "Bob")):
        for m, marker in enumerate(MARKERS):
            got = ds.position.sel(individual=subject, keypoint=marker).values  # (time, space)
            np.testing.assert_allclose(got, xyz[:, 3 * s + m, :].T, rtol=1e-6, equal_nan=True)
    assert np.isnan(ds.position.sel(individual="Alice", keypoint="RASI").values[4]).all()
    assert np.isnan(ds.confidence.values).all()
    assert (ds.attrs["fps"], ds.attrs["unit"], ds.attrs["up_axis"]) == (200.0, "mm", "z")
    np.testing.assert_allclose(ds.time.values, np.arange(8) / 200)
    assert ds.attrs["first_frame"] == 1


def test_without_subjects_the_labels_are_the_keypoints(tmp_path: Path, rng) -> None:
    xyz = rng.uniform(-1, 1, (3, 3, 5))
    path = tmp_path / "plain.c3d"
    write_c3d(path, ["A:x", "B", "C"], xyz, rate=120)
    ds = c3d.read(path, fps=30)  # the file's rate wins over the fps option
    assert list(ds.keypoint.values) == ["A:x", "B", "C"] and ds.sizes["individual"] == 1
    assert ds.attrs["fps"] == 120.0
    assert ds.attrs["up_axis"] == "z"  # no POINT:Y_SCREEN: the labs' Z-up convention
    np.testing.assert_allclose(ds.position.values[..., 0], xyz.transpose(2, 0, 1), rtol=1e-6)
    assert c3d.read(path, include_model_outputs=True).sizes["keypoint"] == 3


def test_model_outputs_can_be_kept(tmp_path: Path, rng) -> None:
    labels, xyz, extra = two_subjects(rng)
    path = tmp_path / "walk.c3d"
    write_c3d(path, labels, xyz, extra=[e for e in extra if e[0] != "SUBJECTS"])
    ds = c3d.read(path, include_model_outputs=True)
    assert "LKneeAngles" in list(ds.keypoint.values)
    assert "LKneeAngles" not in list(c3d.read(path).keypoint.values)


def test_truncated_file_fails_although_ezc3d_reads_it(tmp_path: Path, rng) -> None:
    path = tmp_path / "cut.c3d"
    write_c3d(path, MARKERS, rng.uniform(-1, 1, (3, 3, 300)))
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * 0.6)])
    with pytest.raises(
        TracksError,
        match=r"cut\.c3d: truncated file: \d+ bytes, the header announces \d+ \(frames 1\.\.300\)",
    ):
        c3d.read(path)


@pytest.mark.parametrize("fraction", [0.1, 0.21, 0.3, 0.45, 0.6, 0.75, 0.9])
def test_truncated_anywhere_fails_before_ezc3d_can_crash(tmp_path: Path, rng, fraction) -> None:
    # ezc3d segfaults or hangs on some of these cuts (in the parameter section): the reader
    # must refuse them from the header's section sizes before calling it.
    labels, xyz, extra = two_subjects(rng)
    path = tmp_path / "walk.c3d"
    write_c3d(path, labels, xyz, extra=extra)
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * fraction)])
    with pytest.raises(TracksError, match=r"walk\.c3d: truncated file: \d+ bytes, "):
        c3d.read(path)


def test_without_ezc3d_the_error_names_the_extra(tmp_path: Path, rng, monkeypatch) -> None:
    path = tmp_path / "plain.c3d"
    write_c3d(path, MARKERS, rng.uniform(-1, 1, (3, 3, 4)))
    monkeypatch.setitem(sys.modules, "ezc3d", None)  # as if the extra were not installed
    with pytest.raises(TracksError, match=r"plain\.c3d: reading C3D files needs .*kinefit\[c3d\]"):
        c3d.read(path)


def test_garbage_fails_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "noise.c3d"
    path.write_bytes(bytes([2, 0x50]) + b"\x00" * 100)
    with pytest.raises(TracksError, match=r"noise\.c3d: "):
        c3d.read(path)


def test_unknown_keypoint_in_the_map_fails(tmp_path: Path, rng) -> None:
    labels, xyz, extra = two_subjects(rng)
    path = tmp_path / "walk.c3d"
    write_c3d(path, labels, xyz, extra=extra)
    renamed = read_tracks(path, format="c3d", keypoint_map={"LTOE": "left_toe"})
    assert list(renamed.keypoint.values) == ["LASI", "RASI", "left_toe"]
    with pytest.raises(TracksError, match=r"\['RTOE'\] that the file does not have"):
        read_tracks(path, format="c3d", keypoint_map={"RTOE": "right_toe"})
