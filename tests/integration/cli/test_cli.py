import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from flows.cli import app
from pipeline.bodyplan import load_body_plan
from pipeline.store import open_tracks
from pipeline.store.fit import open_fit
from pipeline.synth import SynthConfig, synthesize

ROOT = Path(__file__).resolve().parents[3]
runner = CliRunner()


@pytest.fixture(scope="module")
def plan(fly_plan_path):
    return load_body_plan(fly_plan_path)


@pytest.fixture
def npz(plan, tmp_path):
    tracks = synthesize(plan, SynthConfig(n_frames=150, noise=0.002), np.random.default_rng(2))
    tracks = tracks.tracks
    path = tmp_path / "session.npz"
    renamed = ["Thorax" if k == "thorax" else k for k in tracks["keypoint"].values]
    np.savez(
        path,
        position=tracks["position"].values[..., 0].transpose(0, 2, 1),
        confidence=tracks["confidence"].values[..., 0],
        keypoints=np.array(renamed),
    )
    return path


def test_ingest_then_fit_then_skip(npz, fly_plan_path, tmp_path):
    keymap = tmp_path / "map.yaml"
    keymap.write_text("Thorax: thorax\n")
    tracks = tmp_path / "t.zarr"
    result = runner.invoke(
        app,
        [
            "ingest",
            str(npz),
            "--out",
            str(tracks),
            "--fps",
            "100",
            "--keypoint-map",
            str(keymap),
            "--chunk-frames",
            "50",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "150 frames at 100 fps, 31 keypoints" in result.output
    ds = open_tracks(tracks)
    assert ds["position"].chunks[0][0] == 50 and "thorax" in ds["keypoint"].values

    config = tmp_path / "fit.yaml"
    config.write_text("solver:\n  n_iterations: 15\n")
    out = tmp_path / "fit.zarr"
    args = [
        "fit",
        str(tracks),
        "--body-plan",
        str(fly_plan_path),
        "--out",
        str(out),
        "--config",
        str(config),
        "--workers",
        "0",
        "--overlap-frames",
        "8",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    for label in (
        "frames",
        "150 x 1 individual",
        "frames/s",
        "median RMS",
        "worst RMS",
        "non-converged",
        "3/3",
    ):
        assert label in result.output
    fit = open_fit(out)
    assert fit.attrs["solver_config"]["n_iterations"] == 15
    assert fit.attrs["overlap_frames"] == 8 and fit.attrs["chunk_frames"] == 50

    again = runner.invoke(app, args)
    assert again.exit_code == 0 and "up to date" in again.output


def test_fit_on_a_local_cluster(npz, fly_plan_path, tmp_path):
    tracks = tmp_path / "t.zarr"
    runner.invoke(app, ["ingest", str(npz), "-o", str(tracks), "--fps", "50"])
    result = runner.invoke(
        app,
        [
            "fit",
            str(tracks),
            "-b",
            str(fly_plan_path),
            "-o",
            str(tmp_path / "f.zarr"),
            "--workers",
            "2",
            "--chunk-frames",
            "75",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "2 fitted now" in result.output
    assert "warning:" in result.output and "['Thorax']" in result.output  # unmapped


def test_errors_are_one_clear_line_with_nonzero_exit(npz, tmp_path):
    result = runner.invoke(app, ["ingest", str(npz), "--out", str(tmp_path / "t.zarr")])
    assert result.exit_code == 1
    assert result.output.strip().startswith("error:")
    assert "frame rate is unknown" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "t.zarr").exists()
    verbose = runner.invoke(
        app, ["ingest", str(npz), "--out", str(tmp_path / "t.zarr"), "--verbose"]
    )
    assert verbose.exit_code == 1 and "Traceback" in verbose.output


def test_fit_errors(tmp_path, fly_plan_path, npz):
    result = runner.invoke(
        app,
        [
            "fit",
            str(tmp_path / "none.zarr"),
            "-b",
            str(fly_plan_path),
            "-o",
            str(tmp_path / "f.zarr"),
            "--workers",
            "0",
        ],
    )
    assert result.exit_code == 1 and "no such tracks store" in result.output
    tracks = tmp_path / "t.zarr"  # a real store: fit checks its tracks before its settings
    ingest = runner.invoke(app, ["ingest", str(npz), "-o", str(tracks), "--fps", "50"])
    assert ingest.exit_code == 0, ingest.output
    bad_config = tmp_path / "bad.yaml"
    bad_config.write_text("solver:\n  n_iter: 3\n")
    result = runner.invoke(
        app,
        [
            "fit",
            str(tracks),
            "-b",
            str(fly_plan_path),
            "-o",
            str(tmp_path / "f.zarr"),
            "--config",
            str(bad_config),
        ],
    )
    assert result.exit_code == 1
    assert "bad.yaml" in result.output and "n_iter" in result.output
    assert "n_iterations" in result.output  # the valid names are listed
    result = runner.invoke(
        app,
        [
            "fit",
            str(tmp_path / "x.zarr"),
            "-b",
            "mannequin",
            "-o",
            str(tmp_path / "f"),
            "--workers",
            "2",
            "--scheduler",
            "tcp://127.0.0.1:1",
        ],
    )
    assert result.exit_code != 0 and "either --workers or --scheduler" in result.output


def test_cli_module_does_not_import_prefect():
    code = "import sys, flows.cli; assert 'prefect' not in sys.modules, 'prefect imported'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
