"""The reprocess flow's calibration stage: one calibration per identity, the fits, the report."""

from __future__ import annotations

import json

from flows.archive import reprocess_archive
from pipeline.bodyplan import save_body_plan
from pipeline.calibrate import load_calibration
from pipeline.store import open_fit
from pipeline.synth.demo import _write_netcdf
from tests.fixtures.flows_samples import run_config
from tests.unit.calibrate.subjects import make_subject, mannequin_template, render


def test_reprocess_calibrates_each_identity_once_and_fits_with_it(
    prefect_harness, dask_address, tmp_path, rng
):
    template = mannequin_template()
    subject, _, _ = make_subject(template, rng)
    archive = tmp_path / "archive"
    archive.mkdir()
    for k in range(3):
        _write_netcdf(render(subject, rng, n_frames=150).tracks, archive / f"day{k}.nc")
    manifest = {
        "sessions": [
            {"name": f"day{k}", "file": f"day{k}.nc", "individuals": {"individual_0": "mouse1"}}
            for k in range(3)
        ]
    }
    (archive / "manifest.yaml").write_text(json.dumps(manifest))
    plan_file = save_body_plan(template, tmp_path / "template.json")
    config = run_config(
        tmp_path,
        dask_address,
        body_plan=str(plan_file),
        archive={"manifest": "manifest.yaml"},
        calibration={"mode": "per_identity", "n_frames": 300},
        chunking={"tracks_chunk_frames": 150},
        outputs={"write_report": True},
    )
    first = reprocess_archive(config)
    assert (first.fitted, first.failed) == (3, 0)
    stored = tmp_path / "calibrations" / "mouse1.json"
    assert sorted(p.name for p in stored.parent.iterdir()) == ["mouse1.json"]
    cal = load_calibration(stored)
    assert [s["name"] for s in cal.record["sessions"]] == ["day0", "day1", "day2"]
    fit = open_fit(tmp_path / "fits" / "day1.zarr")
    assert json.loads(fit.attrs["body_plan"])["joints"][9]["offset_pos"] == list(
        cal.plan.joints[9].offset_pos
    )
    # the report checks the calibration against the run's template, found by its sha256
    section = (tmp_path / "report.html").read_text().split('id="calibration"', 1)[1]
    assert 'alt="template and calibrated body of mouse1"' in section
    assert f"Template: the plan {plan_file}; its sha256 matches the recorded one" in section
    second = reprocess_archive(config)
    assert (second.fitted, second.skipped) == (0, 3)
    assert load_calibration(stored).record["created"] == cal.record["created"]
