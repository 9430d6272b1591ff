"""``kinefit calibrate`` then ``kinefit fit --calibration``: the calibrated fit is closer."""

from __future__ import annotations

import numpy as np
from typer.testing import CliRunner

from flows.cli.app import app
from pipeline.bodyplan import save_body_plan
from pipeline.calibrate import load_calibration
from pipeline.store import open_fit, write_tracks
from tests.unit.calibrate.subjects import make_subject, mannequin_template, render


def test_calibrate_then_fit_with_the_calibration(tmp_path, rng):
    template = mannequin_template()
    subject, _, _ = make_subject(template, rng)
    plan_file = save_body_plan(template, tmp_path / "template.json")
    stores = []
    for k in range(2):
        session = render(subject, rng, n_frames=300, session=f"walk{k}")
        stores.append(write_tracks(session.tracks, tmp_path / f"walk{k}.zarr"))
    runner = CliRunner()
    out = tmp_path / "subject.json"
    args = ["calibrate", *map(str, stores), "-b", str(plan_file), "-o", str(out)]
    result = runner.invoke(app, [*args, "--frames", "400"])
    assert result.exit_code == 0, result.output
    assert "calibrated" in result.output and "keypoint RMS" in result.output
    cal = load_calibration(out)
    assert [s["name"] for s in cal.record["sessions"]] == ["walk0", "walk1"]
    again = runner.invoke(app, [*args])
    assert again.exit_code == 1 and "exists; pass --force" in again.output
    rms = {}
    for name, extra in (
        ("template", ["-b", str(plan_file)]),
        ("calibrated", ["--calibration", str(out)]),
    ):
        fit_out = tmp_path / f"{name}.zarr"
        res = runner.invoke(
            app, ["fit", str(stores[0]), "-o", str(fit_out), "--workers", "0", *extra]
        )
        assert res.exit_code == 0, res.output
        rms[name] = float(np.nanmean(open_fit(fit_out)["rms_error"].values))
    assert rms["calibrated"] < rms["template"] / 3, rms
    other = tmp_path / "other.json"
    save_body_plan(subject, other)
    res = runner.invoke(
        app,
        [
            "fit",
            str(stores[0]),
            "-o",
            str(tmp_path / "x.zarr"),
            "--workers",
            "0",
            "--calibration",
            str(out),
            "-b",
            str(other),
        ],
    )
    assert res.exit_code == 1 and "another template than --body-plan" in res.output
