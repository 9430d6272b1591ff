"""Task bodies called directly (``.fn``): each is a thin shell around one pipeline call."""

from __future__ import annotations

import pytest

from flows.tasks import (
    discover_task,
    export_task,
    fit_task,
    ingest_task,
    outputs_of,
    publish_task,
    report_task,
)
from pipeline.archive.discover import SessionSource
from pipeline.archive.policy import is_transient
from pipeline.archive.summary import ArchiveSummary, SessionOutcome
from pipeline.config import ArchiveConfig, RunConfig
from tests.fixtures.flows_samples import demo_archive


@pytest.fixture(scope="module")
def fitted(tmp_path_factory, plan, dask_address):
    """One session ingested on the cluster and fitted by the task bodies."""
    from distributed import Client

    root = tmp_path_factory.mktemp("tasks")
    demo_archive(root / "archive", plan, n_frames=48)
    sources = discover_task.fn(ArchiveConfig(path=str(root / "archive"), patterns=["*.nc"]))
    assert [s.name for s in sources] == [
        "walk_clean",
        "walk_dropouts",
        "walk_noisy",
        "walk_outliers",
    ]
    source = sources[0]
    tracks = root / "tracks" / "walk_clean.zarr"
    with Client(dask_address) as client:
        report = ingest_task.fn(source, str(tracks), 24, False, client)
        assert not report.skipped and report.n_frames == 48
        solver = RunConfig(solver={"neutral_weight": 1e-6}).solver_config
        args = ("walk_clean", str(tracks), plan, solver, str(root / "fits" / "walk_clean.zarr"))
        outcome = fit_task.fn(*args, None, 16, None, False, client)
        again = fit_task.fn(*args, None, 16, None, False, client)
    return root, outcome, again


def test_ingest_and_fit_task_bodies(fitted):
    root, outcome, again = fitted
    assert outcome.status == "fitted" and outcome.frames == 48 and outcome.individuals == 1
    assert outcome.rms is not None and outcome.rms < 1e-3  # noise-free: exact pose
    assert outcome.fit == str(root / "fits" / "walk_clean.zarr")
    assert again.status == "skipped" and again.rms == outcome.rms


def test_ingest_task_in_process_skips_current_stores(fitted):
    root, *_ = fitted
    source = SessionSource("walk_clean", str(root / "archive" / "walk_clean.nc"))
    report = ingest_task.fn(source, str(root / "tracks" / "walk_clean.zarr"), 24, False)
    assert report.skipped


def test_report_and_export_task_bodies(fitted):
    root, outcome, _ = fitted
    html = report_task.fn(str(root / "fits"), str(root / "report.html"), 0)
    assert html == str(root / "report.html") and "walk_clean" in (root / "report.html").read_text()
    csv = export_task.fn(outcome.fit, "csv", outputs_of(outcome.fit, "csv"))
    assert csv == str(root / "fits" / "walk_clean.csv")
    assert (root / "fits" / "walk_clean.csv").read_text().startswith("time [s],frame,individual,")


@pytest.mark.filterwarnings("ignore:Artifact creation outside:FutureWarning")
def test_publish_task_body_creates_the_artifact(prefect_harness):
    summary = ArchiveSummary(
        (SessionOutcome("s1", "fitted", frames=10, rms=0.5), SessionOutcome("s2", "skipped")),
        fit_seconds=2.0,
        seconds=3.0,
    )
    markdown = publish_task.fn(summary, "kinefit-task-test")
    assert "| 2 | 1 | 1 | 0 | 10 | 5 |" in markdown and "| s1 | fitted | 0.5 |" in markdown


def test_only_transient_errors_are_retried():
    assert is_transient(TimeoutError()) and is_transient(ConnectionResetError())
    assert is_transient(OSError("stale NFS handle"))
    wrapped = RuntimeError("chunk failed")
    wrapped.__cause__ = type("KilledWorker", (Exception,), {})()
    assert is_transient(wrapped)
    for permanent in (FileNotFoundError("x"), ValueError("bad"), PermissionError("no")):
        assert not is_transient(permanent)
