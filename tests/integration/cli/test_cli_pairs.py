"""Every ``KEY=VALUE`` option of the CLI: one line naming the option, exit 1, never exit 2.

``-O``, ``--set``, ``--views``, ``--offset`` and ``--rename`` share one parser
(:mod:`pipeline.config.pairs`); each mistake below used to be an "internal error
(BadParameter ...)".
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from flows.cli import app
from tests.fixtures.shared_data import SHARED

DLC = SHARED / "data" / "realdata" / "dlc" / "CollectedData_Mackenzie.csv"
runner = CliRunner()


def _ingest(tmp_path, *args):
    return ["ingest", str(DLC), "-o", str(tmp_path / "t.zarr"), *args]


def _views(tmp_path, *args):
    return ["ingest", "-o", str(tmp_path / "t.zarr"), *args]


CASES = [
    ("-O no =", _ingest, ["-O", "unit"], "--option 'unit': expected KEY=VALUE (no '=' in it)"),
    ("-O empty key", _ingest, ["-O", "=mm"], "--option '=mm': expected KEY=VALUE; the name"),
    ("-O empty value", _ingest, ["-O", "unit="], "--option 'unit=': expected KEY=VALUE; the"),
    ("-O twice", _ingest, ["-O", "unit=mm", "-O", "unit=cm"], "'unit' is given twice"),
    ("-O bad name", _ingest, ["-O", "my unit=mm"], "'my unit' is not a name of letters"),
    ("--views no =", _views, ["--views", "camA", "--calibration", str(DLC)], "--views 'camA'"),
    (
        "--views twice",
        _views,
        ["--views", "camA=a.csv", "camA=b.csv", "--calibration", str(DLC)],
        "--views 'camA=b.csv': 'camA' is given twice",
    ),
    ("--views without --calibration", _views, ["--views", "camA=a.csv"], "--views needs --cal"),
    (
        "--offset not a number",
        _views,
        ["--views", "camA=a.csv", "--offset", "camA=two", "--calibration", str(DLC)],
        "--offset 'camA=two': invalid literal for int()",
    ),
    ("--set no =", lambda p, *a: ["config", "show", *a], ["--set", "solver"], "--set 'solver'"),
    (
        "--set bad path",
        lambda p, *a: ["config", "show", *a],
        ["--set", "solver..loss=huber"],
        "'solver..loss' is not a dotted key path",
    ),
    (
        "--rename no =",
        lambda p, *a: ["body-plan", "edit", "mannequin", "-o", str(p / "e.json"), *a],
        ["--rename", "pelvis"],
        "--rename 'pelvis': expected OLD=NEW (no '=' in it)",
    ),
    ("--out missing", lambda p, *a: ["ingest", str(DLC), *a], [], "--out: the tracks store"),
]


@pytest.mark.parametrize(("name", "command", "args", "message"), CASES, ids=[c[0] for c in CASES])
def test_a_malformed_pair_is_one_line_naming_the_option(tmp_path, name, command, args, message):
    result = runner.invoke(app, command(tmp_path, *args))
    assert result.exit_code == 1, (name, result.output)
    lines = result.output.strip().splitlines()
    assert lines == [f"error: {lines[0].removeprefix('error: ')}"], result.output  # one line
    assert message in lines[0], lines[0]
    assert "internal error" not in result.output
    assert not (tmp_path / "t.zarr").exists() and not (tmp_path / "e.json").exists()


def test_a_typer_bad_parameter_raised_in_a_command_is_a_user_error(tmp_path):
    """``--workers`` with ``--scheduler``: click's wording, the option named, exit 1."""
    args = ["fit", str(tmp_path / "t.zarr"), "-o", str(tmp_path / "f.zarr"), "-b", "mannequin"]
    result = runner.invoke(app, [*args, "--workers", "1", "--scheduler", "tcp://x:1"])
    assert result.exit_code == 1, result.output
    assert "pass either --workers or --scheduler, not both" in result.output
    assert "internal error" not in result.output


def test_good_pairs_still_work(tmp_path):
    out = tmp_path / "e.json"
    result = runner.invoke(
        app, ["body-plan", "edit", "mannequin", "-o", str(out), "--rename", "pelvis = hips"]
    )
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["config", "show", "--set", "solver.loss=huber"])
    assert result.exit_code == 0 and "loss: huber" in result.output


def test_ingest_options_win_over_the_configs_option_by_option(tmp_path):
    import numpy as np

    from pipeline.store import open_tracks

    raw = tmp_path / "walk.npz"
    np.savez(raw, position=np.ones((4, 2, 3)), keypoints=np.array(["a", "b"]))
    config = tmp_path / "run.yaml"
    config.write_text("archive: {fps: 25, options: {unit: mm, up_axis: y, to_unit: m}}\n")
    out = tmp_path / "t.zarr"
    args = ["ingest", str(raw), "-o", str(out), "-c", str(config), "-O", "unit=cm"]
    result = runner.invoke(app, [*args, "--to-unit", "mm"])
    assert result.exit_code == 0, result.output
    ds = open_tracks(out)
    assert (ds.attrs["fps"], ds.attrs["up_axis"], ds.attrs["unit"]) == (25.0, "y", "mm")
    np.testing.assert_allclose(ds["position"].values, 10.0)  # 1 cm as mm, not as m
