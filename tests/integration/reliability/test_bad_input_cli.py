"""Bad run configs and CLI arguments: exit status 1, one message naming the file and the
key (or the option), and nothing created in the output folder.

``kinefit reprocess`` and ``kinefit fit`` run in-process (typer's CliRunner); a bad config
or argument must be refused before any flow, cluster or store starts.
"""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from flows.cli import app
from pipeline.fit import fit_session
from tests.fixtures.reliability_helpers import assert_unchanged, snapshot

runner = CliRunner()


@pytest.fixture(scope="module")
def folder(fly, fly_tracks, tmp_path_factory):
    """An output root with a tracks store and a complete fit."""
    from pipeline.solve import SolverConfig
    from pipeline.store import write_tracks

    folder = tmp_path_factory.mktemp("root")
    write_tracks(fly_tracks, folder / "t.zarr", chunk_frames=20)
    fit_session(folder / "t.zarr", fly, SolverConfig(), folder / "fit.zarr")
    (folder / "archive").mkdir()
    return folder


def _one_error(result, *needles: str) -> None:
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())  # rich wraps long lines
    assert text.count("error:") == 1 and "Traceback" not in text, result.output
    for needle in needles:
        assert re.search(needle, text), (needle, text)


# (id, YAML text, regex of the message after the config path)
CONFIGS = [
    ("unknown-section", "archve:\n  path: x\n", r"archve: unknown key; valid keys: archive,"),
    ("unknown-key", "solver:\n  n_iter: 3\n", r"solver\.n_iter: unknown key; valid keys: n_it"),
    ("wrong-type", "chunking:\n  chunk_frames: many\n", r"chunking\.chunk_frames: Input should"),
    ("bool-as-int", "chunking:\n  chunk_frames: true\n", r"chunking\.chunk_frames: Input should"),
    ("out-of-range", "chunking:\n  overlap_frames: -1\n", r"chunking\.overlap_frames: .*greater"),
    ("nan", "solver:\n  neutral_weight: .nan\n", r"solver\.neutral_weight: must be a finite"),
    ("missing-plan", "body_plan: nope.json\n", r"body_plan: no such body-plan file"),
    ("bad-cron-range", "schedule:\n  cron: '61 * * * *'\n", r"schedule\.cron: .*'61' is not in"),
    ("bad-cron-fields", "schedule:\n  cron: '* * *'\n", r"schedule\.cron: .*expected 5 fields"),
    ("bad-timezone", "schedule:\n  timezone: Mars/Olympus\n", r"schedule\.timezone: unknown"),
    ("unknown-preset", "cluster: nosuch\n", r"cluster: unknown cluster preset 'nosuch'; valid"),
    ("escaping-pattern", "archive:\n  patterns: ['../*']\n", r"archive\.patterns: .*inside"),
    ("absolute-pattern", "archive:\n  patterns: ['/etc/*']\n", r"archive\.patterns: .*inside"),
    ("unknown-export", "outputs:\n  exports: [xlsx]\n", r"outputs\.exports\.0: Input should"),
    ("yaml-syntax", "solver: [1, 2\n", r"cannot read the run config"),
    ("python-tag", "solver: !!python/object/apply:os.system ['true']\n", r"cannot read"),
    ("not-a-mapping", "- a\n- b\n", r"a run config is a YAML mapping"),
]


@pytest.mark.parametrize("text, match", [c[1:] for c in CONFIGS], ids=[c[0] for c in CONFIGS])
def test_reprocess_refuses_bad_config(folder, request, text, match):
    config = folder / f"{request.node.callspec.id}.yaml"
    config.write_text(text)
    before = snapshot(folder)
    result = runner.invoke(
        app, ["reprocess", "-c", str(config), "--archive", str(folder / "archive")]
    )
    _one_error(result, re.escape(str(config)) + ": .*" + match)
    assert_unchanged(before, folder)


@pytest.mark.parametrize(
    "out",
    [
        pytest.param(None, id="no-out"),
        pytest.param("out", id="out-dir"),
    ],
)
def test_reprocess_names_only_the_real_problem(folder, out):
    config = folder / "bad-solver.yaml"
    config.write_text("solver:\n  n_iter: 3\n")
    args = ["reprocess", "-c", str(config), "--archive", str(folder / "archive")]
    result = runner.invoke(app, args + ([] if out is None else ["-o", str(folder / out)]))
    _one_error(result, r"solver\.n_iter: unknown key")
    assert "outputs.root" not in result.output


def test_repeated_config_key_is_refused(folder):
    config = folder / "twice.yaml"
    config.write_text("solver:\n  n_iterations: 3\nsolver:\n  n_iterations: 5\n")
    result = runner.invoke(app, ["config", "show", "-c", str(config)])
    _one_error(result, re.escape(str(config)) + r": .*key 'solver' is repeated \(line 3\)")


def _fit(folder, *extra):
    return [
        "fit",
        str(folder / "t.zarr"),
        "-b",
        "{plan}",
        "-o",
        str(folder / "fit.zarr"),
        "--workers",
        "0",
        *extra,
    ]


# (id, arguments after `kinefit`, regex of the message)
ARGS = [
    pytest.param(["--chunk-frames", "0"], r"chunk.frames", id="chunk-frames-zero"),
    pytest.param(["--chunk-frames", "-5"], r"chunk.frames", id="chunk-frames-negative"),
    pytest.param(["--overlap-frames", "-1"], r"overlap.frames", id="overlap-negative"),
    pytest.param(["--workers", "-1"], r"workers|n_workers", id="workers-negative"),
    pytest.param(
        ["--scheduler", "tcp://127.0.0.1:1"], r"either --workers or ", id="workers-and-scheduler"
    ),
    pytest.param(["--keypoint-map", "nope.yaml"], r"nope\.yaml", id="missing-keypoint-map"),
    pytest.param(["--config", "nope.yaml"], r"nope\.yaml", id="bad-config-file"),
]


@pytest.mark.parametrize("extra, match", ARGS)
def test_fit_refuses_bad_arguments(folder, fly_plan_path, extra, match):
    args = [a.replace("{plan}", str(fly_plan_path)) for a in _fit(folder, *extra)]
    before = snapshot(folder)
    result = runner.invoke(app, args)
    assert result.exit_code != 0, result.output
    text = " ".join(result.output.split())
    assert re.search(match, text), text
    assert "Traceback" not in text
    assert_unchanged(before, folder)


PATH_ARGS = [
    ("unknown-plan", ["fit", "{tracks}", "-b", "mannequinn", "-o", "{out}"], r"mannequinn"),
    (
        "missing-tracks",
        ["fit", "{root}/none.zarr", "-b", "{plan}", "-o", "{out}"],
        r"none\.zarr: no such tracks store",
    ),
    (
        "out-is-the-tracks",
        ["fit", "{tracks}", "-b", "{plan}", "-o", "{tracks}"],
        r"would overwrite the input tracks store",
    ),
    (
        "out-is-not-a-fit",
        ["fit", "{tracks}", "-b", "{plan}", "-o", "{root}/archive"],
        r"archive: exists and is not a kinefit fit store",
    ),
    ("ingest-missing-file", ["ingest", "{root}/none.npz", "-o", "{root}/new.zarr"], r"none\.npz"),
    ("ingest-bad-fps", ["ingest", "{root}/x.npz", "-o", "{root}/new.zarr", "--fps", "-3"], r"fps"),
    (
        "ingest-unknown-format",
        ["ingest", "{root}/x.npz", "-o", "{root}/new.zarr", "--format", "xlsx"],
        r"unknown tracks format 'xlsx'; valid formats",
    ),
]


@pytest.mark.parametrize("args, match", [c[1:] for c in PATH_ARGS], ids=[c[0] for c in PATH_ARGS])
def test_cli_refuses_bad_paths(folder, fly_plan_path, args, match):
    import numpy as np

    np.savez(folder / "x.npz", position=np.zeros((5, 2, 3)), keypoints=np.array(["a", "b"]))
    names = {
        "{tracks}": str(folder / "t.zarr"),
        "{out}": str(folder / "fit.zarr"),
        "{root}": str(folder),
        "{plan}": str(fly_plan_path),
    }
    for key, value in names.items():
        args = [a.replace(key, value) for a in args]
    before = snapshot(folder)
    result = runner.invoke(app, [*args, "--workers", "0"] if args[0] == "fit" else args)
    _one_error(result, match)
    assert_unchanged(before, folder)
