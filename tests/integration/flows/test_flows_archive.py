"""Archive flows for real: Prefect test harness, a LocalCluster, zarr stores in tmp_path."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from flows.archive import SUMMARY_ARTIFACT, export_session, reprocess_archive
from pipeline.bodyplan import body_plan_to_dict, save_body_plan
from pipeline.errors import SessionsFailed
from pipeline.store import open_fit, open_tracks
from pipeline.synth.demo import DEMO_SESSIONS
from tests.fixtures.flows_samples import demo_archive, run_config

SESSIONS = sorted(DEMO_SESSIONS)


def _latest_flow_run(name: str):
    from prefect.client.orchestration import get_client  # noqa: TID251
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName  # noqa: TID251
    from prefect.client.schemas.sorting import FlowRunSort  # noqa: TID251

    with get_client(sync_client=True) as client:
        (run,) = client.read_flow_runs(
            flow_filter=FlowFilter(name=FlowFilterName(any_=[name])),
            sort=FlowRunSort.START_TIME_DESC,
            limit=1,
        )
    return run


def _latest_artifact(key: str):
    from prefect.client.orchestration import get_client  # noqa: TID251
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey  # noqa: TID251
    from prefect.client.schemas.sorting import ArtifactSort  # noqa: TID251

    with get_client(sync_client=True) as client:
        found = client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])),
            sort=ArtifactSort.CREATED_DESC,
            limit=1,
        )
    return found[0] if found else None


def test_reprocess_skip_and_refit_after_a_body_plan_edit(
    prefect_harness, dask_address, plan, tmp_path
):
    demo_archive(tmp_path / "archive", plan)
    plan_file = save_body_plan(plan, tmp_path / "mannequin.json")
    config = run_config(
        tmp_path,
        dask_address,
        body_plan=str(plan_file),
        outputs={"write_report": True},
        chunking={"tracks_chunk_frames": 64},  # one chunk task per session
    )

    first = reprocess_archive(config)
    assert (first.fitted, first.skipped, first.failed) == (5, 0, 0)
    assert [s.session for s in first.sessions] == SESSIONS
    assert first.frames == 5 * 64 and first.frames_per_s > 0
    pair = next(s for s in first.sessions if s.session == "pair_csv")
    assert pair.individuals == 2
    clean = next(s for s in first.sessions if s.session == "walk_clean")
    assert clean.rms < 1e-3  # noise-free session: the known pose comes back
    assert first.worst(5)[-1].session == "walk_clean"  # ranked by median RMS, worst first
    for name in SESSIONS:
        fit = open_fit(tmp_path / "fits" / f"{name}.zarr")
        assert fit.attrs["session"] == name and fit.sizes["time"] == 64
        assert open_tracks(tmp_path / "tracks" / f"{name}.zarr").attrs["session"] == name
    assert (tmp_path / "report.html").read_text().lstrip().lower().startswith("<!doctype html")
    artifact = _latest_artifact(SUMMARY_ARTIFACT)
    assert artifact is not None and "| 5 | 5 | 0 | 0 |" in artifact.data
    assert "report.html" in artifact.data and "walk_clean" in artifact.data

    second = reprocess_archive(config)
    assert (second.fitted, second.skipped, second.failed) == (0, 5, 0)
    assert second.frames == 0 and second.frames_per_s is None
    assert "| 5 | 0 | 5 | 0 |" in _latest_artifact(SUMMARY_ARTIFACT).data

    edited = body_plan_to_dict(plan)
    edited["joints"][0]["weight_scaler"] = 2.0  # any edit changes the plan's sha256
    plan_file.write_text(json.dumps(edited))
    third = reprocess_archive(config)
    assert (third.fitted, third.skipped, third.failed) == (5, 0, 0)


def test_one_corrupt_session_fails_alone(prefect_harness, dask_address, plan, tmp_path):
    demo_archive(tmp_path / "archive", plan, n_frames=48)
    (tmp_path / "archive" / "broken.nc").write_bytes(b"CDF\x01 truncated garbage")
    alien = tmp_path / "archive" / "alien.csv"  # ingests fine, but observes no joint
    alien.write_text("frame,keypoint,x,y,z\n0,antenna,0,0,0\n1,antenna,1,0,0\n")
    config = run_config(tmp_path, dask_address)

    with pytest.raises(SessionsFailed, match=r"2 of 7 session\(s\) failed: alien, broken") as e:
        reprocess_archive(config)
    summary = e.value.summary
    assert (summary.fitted, summary.skipped, summary.failed) == (5, 0, 2)
    run = _latest_flow_run("reprocess-archive")
    assert run.state.type.value == "FAILED" and "2 of 7 session(s) failed" in run.state.message
    artifact = _latest_artifact(SUMMARY_ARTIFACT)  # still written for the failed run
    assert artifact.flow_run_id == run.id and "| broken | ingest |" in artifact.data
    failures = {s.session: s for s in summary.sessions if s.status == "failed"}
    assert failures["broken"].stage == "ingest" and "broken.nc" in failures["broken"].error
    assert failures["alien"].stage == "fit" and "alien" in failures["alien"].error
    assert not (tmp_path / "fits" / "broken.zarr").exists()
    text = summary.to_markdown()
    assert "### Failed sessions" in text and "| broken | ingest |" in text


def test_dask_workers_never_import_prefect(prefect_harness, dask_address, plan, tmp_path):
    from distributed import Client

    demo_archive(tmp_path / "archive", plan, n_frames=40)
    assert reprocess_archive(run_config(tmp_path, dask_address)).fitted == 5
    with Client(dask_address) as client:
        loaded = client.run(lambda: __import__("sys").modules.get("prefect") is not None)
    assert loaded and not any(loaded.values())


def test_export_session_writes_dof_trajectories(prefect_harness, plan, tmp_path):
    demo_archive(tmp_path / "archive", plan, n_frames=40)
    summary = reprocess_archive(run_config(tmp_path, None, outputs={"exports": ["csv"]}))
    assert summary.fitted == 5  # in the flow's own process (n_workers: 0)
    beside = tmp_path / "fits" / "pair_csv.csv"
    assert beside.exists()
    fit = tmp_path / "fits" / "walk_clean.zarr"
    out = export_session(str(fit), "csv", str(tmp_path / "clean.csv"))
    table = pd.read_csv(out)
    ds = open_fit(fit)
    names = {c.split(" [")[0] for c in table}  # units in brackets: "time [s]", "root_x [m]"
    assert len(table) == 40 and {"time", "frame", "individual", "root_x"} <= names
    first_dof = str(ds["dof"].values[0])
    np.testing.assert_allclose(
        table[f"{first_dof} [rad]"], ds["dof_value"].isel(individual=0, dof=0).values, rtol=1e-7
    )
    assert len(pd.read_csv(beside)) == 2 * 40
    with pytest.raises(ValueError, match="unknown export format 'xlsx'; valid formats: csv, bvh"):
        export_session(str(fit), "xlsx")
