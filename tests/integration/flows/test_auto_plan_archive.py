"""The archive flow under ``body_plan: auto``: every session its own plan, stable reruns.

The demo archive's sessions carry the mannequin's keypoint names; an alien session (one
keypoint no plan has) is refused alone with the best candidates named.
"""

from __future__ import annotations

import pytest

from flows.archive import reprocess_archive
from pipeline.errors import SessionsFailed
from pipeline.store.attrs import store_attrs
from pipeline.synth.demo import DEMO_SESSIONS
from tests.fixtures.flows_samples import demo_archive, run_config


def test_reprocess_chooses_per_session_and_a_rerun_skips(prefect_harness, plan, tmp_path):
    demo_archive(tmp_path / "archive", plan, n_frames=40)
    alien = tmp_path / "archive" / "alien.csv"
    alien.write_text("frame,keypoint,x,y,z\n0,antenna,0,0,0\n1,antenna,1,0,0\n")
    config = run_config(tmp_path, None, body_plan="auto")

    with pytest.raises(SessionsFailed, match=r"1 of 6 session\(s\) failed: alien") as e:
        reprocess_archive(config)
    summary = e.value.summary
    assert (summary.fitted, summary.failed) == (len(DEMO_SESSIONS), 1)
    failure = next(s for s in summary.sessions if s.status == "failed")
    assert failure.stage == "fit" and "alien.zarr: no body plan matches" in failure.error
    assert "best candidates: " in failure.error
    for name in DEMO_SESSIONS:
        choice = store_attrs(tmp_path / "fits" / f"{name}.zarr")["body_plan_choice"]
        assert choice["plan"] == "mannequin" and choice["map"] == "proposed", (name, choice)
    calibrated = {
        name: store_attrs(tmp_path / "fits" / f"{name}.zarr")["body_plan_choice"]["calibrated"]
        for name in DEMO_SESSIONS
    }
    assert calibrated["pair_csv"] is False and any(calibrated.values())  # two individuals

    alien.unlink()
    second = reprocess_archive(config)
    assert (second.fitted, second.skipped, second.failed) == (0, len(DEMO_SESSIONS), 0)
