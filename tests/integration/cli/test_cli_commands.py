"""The ``kinefit`` CLI end to end: help everywhere, ingest options, fit, demo, reprocess."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml
from typer.testing import CliRunner

from flows.cli import app
from pipeline.solve import SolverConfig
from pipeline.store import open_fit, open_tracks

runner = CliRunner()
COMMANDS = [
    [],
    ["demo"],
    ["ingest"],
    ["fit"],
    ["reprocess"],
    ["serve"],
    ["export"],
    ["export", "csv"],
    ["export", "kimodo"],
    ["report"],
    ["config"],
    ["config", "show"],
    ["body-plan"],
    ["body-plan", "validate"],
    ["body-plan", "show"],
]
BVH = """HIERARCHY
ROOT hip
{
  OFFSET 0 0 0
  CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation
  JOINT knee
  {
    OFFSET 0 -10 0
    CHANNELS 3 Zrotation Xrotation Yrotation
    End Site
    {
      OFFSET 0 -10 0
    }
  }
}
MOTION
Frames: 3
Frame Time: 0.02
0 0 0 0 0 0 0 0 0
1 0 0 0 0 0 90 0 0
2 0 0 0 0 0 0 0 0
"""


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "kinefit")
def test_help_for_every_command(command):
    result = runner.invoke(app, [*command, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output


def test_help_is_fast_and_does_not_import_prefect_or_numpy():
    code = (
        "import sys\nfrom typer.testing import CliRunner\nfrom flows.cli import app\n"
        "assert CliRunner().invoke(app, ['--help']).exit_code == 0\n"
        "heavy = [m for m in ('prefect', 'numpy', 'xarray', 'distributed') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_ingest_passes_reader_options(tmp_path):
    source = tmp_path / "walk.bvh"
    source.write_text(BVH)
    out = tmp_path / "walk.zarr"
    args = ["ingest", str(source), "-o", str(out), "-O", "unit=cm", "--option", "up_axis=y"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "wrote" in result.output and "3 frames at 50 fps" in result.output
    ds = open_tracks(out)
    assert (ds.attrs["unit"], ds.attrs["up_axis"]) == ("cm", "y")
    result = runner.invoke(
        app, ["ingest", str(source), "-o", str(tmp_path / "x.zarr"), "-O", "colour=red"]
    )
    assert result.exit_code == 1 and "no option(s) ['colour']; valid options:" in result.output
    result = runner.invoke(
        app, ["ingest", str(source), "-o", str(tmp_path / "x.zarr"), "-O", "unit"]
    )
    assert result.exit_code == 1 and "--option 'unit': expected KEY=VALUE" in result.output


def test_ingest_kimodo_needs_and_gets_the_skeleton_options(tmp_path):
    constraints = tmp_path / "c.json"
    constraints.write_text('[{"type": "fullbody", "frame_indices": [0]}]')
    base = ["ingest", str(constraints), "-o", str(tmp_path / "k.zarr"), "--format", "kimodo"]
    result = runner.invoke(app, base)
    assert result.exit_code == 1 and "needs --skeleton-file and --skeleton" in result.output
    skeletons = tmp_path / "skeletons.json"
    skeletons.write_text("{}")
    result = runner.invoke(app, [*base, "--skeleton-file", str(skeletons), "--skeleton", "s30"])
    assert result.exit_code == 1 and "needs skeleton_file=" not in result.output


def test_config_show_prints_the_effective_config(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("solver: {n_iterations: 7}\ncluster: slurm\n")
    result = runner.invoke(
        app, ["config", "show", "-c", str(path), "--set", "chunking.chunk_frames=64"]
    )
    assert result.exit_code == 0, result.output
    shown = yaml.safe_load(result.output)
    default = SolverConfig().neutral_weight  # the one source of the default
    assert shown["solver"]["n_iterations"] == 7 and shown["solver"]["neutral_weight"] == default
    assert shown["chunking"]["chunk_frames"] == 64 and shown["cluster"]["mode"] == "slurm"
    as_json = runner.invoke(app, ["config", "show", "--format", "json"])
    assert json.loads(as_json.output)["body_plan"] == "mannequin"
    path.write_text("solver: {n_iterations: 0}\n")
    bad = runner.invoke(app, ["config", "show", "-c", str(path)])
    assert bad.exit_code == 1 and "solver.n_iterations: must be a positive integer" in bad.output


def test_body_plan_commands(tmp_path, fly_plan_path):
    shown = runner.invoke(app, ["body-plan", "show", "mannequin"])
    assert shown.exit_code == 0 and "knee_l hinge: hinge [0°, 150°]" in shown.output
    assert "29 joints, 32 DOFs" in shown.output
    valid = runner.invoke(app, ["body-plan", "validate", str(fly_plan_path)])
    assert valid.exit_code == 0 and "valid" in valid.output and "sha256" in valid.output
    broken = tmp_path / "broken.json"
    broken.write_text('{"fixed_base": false, "joints": [{"name": "a", "parent": "ghost"}]}')
    invalid = runner.invoke(app, ["body-plan", "validate", str(broken)])
    assert invalid.exit_code == 1 and "broken.json" in invalid.output


def test_demo_twice_then_reprocess_and_export(prefect_harness, dask_address, tmp_path):
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(
        f"cluster: {{mode: address, address: '{dask_address}'}}\noutputs: {{report_detailed: 0}}\n"
    )
    out = tmp_path / "demo"
    args = ["demo", "--out", str(out), "--frames", "48", "--config", str(cluster)]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "fitted / skipped / failed  5 / 0 / 0" in first.output
    assert "worst sessions by median RMS" in first.output
    for hint in ("xr.open_zarr(", "open_fit(", " notebook FITS=", "report.html"):
        assert hint in first.output
    assert (out / "kinefit.yaml").is_file() and (out / "report.html").is_file()
    second = runner.invoke(app, args)
    assert second.exit_code == 0 and "0 / 5 / 0" in second.output

    (out / "archive" / "walk_noisy.nc").write_bytes(b"not netCDF")  # one session breaks
    again = runner.invoke(app, ["reprocess", "-c", str(out / "kinefit.yaml")])
    assert again.exit_code == 1
    assert "0 / 4 / 1" in again.output and "failed walk_noisy (ingest)" in again.output

    fit = out / "fits" / "pair_csv.zarr"
    exported = runner.invoke(app, ["export", "csv", str(fit)])
    assert exported.exit_code == 0 and (out / "fits" / "pair_csv.csv").is_file()
    assert open_fit(fit).sizes["individual"] == 2


def test_reprocess_and_fit_commands(prefect_harness, plan, tmp_path):
    from tests.fixtures.flows_samples import demo_archive

    demo_archive(tmp_path / "raw", plan, n_frames=40)
    args = [
        "reprocess",
        "--archive",
        str(tmp_path / "raw"),
        "--out",
        str(tmp_path / "o"),
        "--workers",
        "0",
        "--set",
        "outputs.write_report=false",
        "--set",
        "archive.patterns=[walk_c*.nc]",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "1 / 0 / 0" in result.output
    tracks = tmp_path / "o" / "tracks" / "walk_clean.zarr"

    config = tmp_path / "fit.yaml"
    config.write_text(
        "body_plan: mannequin\nsolver: {neutral_weight: 1.0e-6}\n"
        "chunking: {chunk_frames: 20, overlap_frames: 4}\n"
    )
    fit = ["fit", str(tracks), "-o", str(tmp_path / "f.zarr"), "-c", str(config), "--workers", "0"]
    fitted = runner.invoke(app, fit)
    assert fitted.exit_code == 0, fitted.output
    assert "2 fitted now" in fitted.output and "median RMS" in fitted.output
    store = open_fit(tmp_path / "f.zarr")
    assert store.attrs["solver_config"]["neutral_weight"] == 1e-6
    assert store.attrs["chunk_frames"] == 20 and store.attrs["overlap_frames"] == 4
    assert "up to date" in runner.invoke(app, fit).output
    zero = runner.invoke(app, [*fit[:-2], "--workers", "0", "--chunk-frames", "0"])
    assert zero.exit_code == 1 and "--chunk-frames must be >= 1" in zero.output  # not "default"
    missing = runner.invoke(app, ["fit", str(tracks), "-o", str(tmp_path / "g.zarr")])
    assert missing.exit_code != 0 and "--body-plan" in missing.output
