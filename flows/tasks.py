"""Prefect tasks: each is a few lines around one ``pipeline`` call.

Tasks run in the flow's process. Heavy work goes to the Dask cluster as plain dask work
through a ``distributed.Client`` (``pipeline.fit.fit_session`` submits one task per time
chunk; ingestion is submitted as one plain function call), so Dask workers never import
prefect. Tasks use ``cache_policy=NONE``: skipping finished work is decided by kinefit's
fingerprints and chunk markers, never by Prefect's cache (its results would pile up under
``PREFECT_HOME/storage`` and its cache hits could skip writes). Retries wrap idempotent
work only (ingest writes atomically, fits resume) and only for transient errors.
"""

from __future__ import annotations

from typing import Any

from prefect import task  # noqa: TID251 - flows/ is where prefect lives
from prefect.artifacts import create_markdown_artifact  # noqa: TID251
from prefect.cache_policies import NONE  # noqa: TID251

from pipeline.archive.discover import SessionSource, discover_sessions
from pipeline.archive.ingest import IngestReport, ingest_session
from pipeline.archive.policy import is_transient
from pipeline.archive.summary import ArchiveSummary, SessionOutcome, fit_outcome
from pipeline.bodyplan import BodyPlan, resolve_body_plan
from pipeline.calibrate import CalibrationConfig
from pipeline.calibrate.identity import IdentityCalibration, Member, calibrate_identity
from pipeline.export.exporter_registry import default_output, export
from pipeline.fit import fit_session
from pipeline.fit.plan_choice import session_plan
from pipeline.opensim_setup.fit_terms import setup_fit
from pipeline.solve import SolverConfig


def _retry_transient(task: Any, task_run: Any, state: Any) -> bool:
    try:
        state.result()
    except Exception as exc:  # noqa: BLE001 - inspected, not handled
        return is_transient(exc)
    return False


_TASK: dict[str, Any] = {"cache_policy": NONE, "persist_result": False}
_RETRY: dict[str, Any] = {
    "retries": 2,
    "retry_delay_seconds": 5,
    "retry_condition_fn": _retry_transient,
}


@task(name="discover-sessions", **_TASK)
def discover_task(archive: Any) -> list[SessionSource]:
    """Find the sessions of an archive (:func:`pipeline.archive.discover.discover_sessions`)."""
    return discover_sessions(archive)


@task(name="ingest-session", task_run_name="ingest {source.name}", **_TASK, **_RETRY)
def ingest_task(
    source: SessionSource, out: str, chunk_frames: int, force: bool, client: Any = None
) -> IngestReport:
    """Ingest one session into its tracks store, on the cluster when there is one."""
    if client is None:
        return ingest_session(source, out, chunk_frames, force=force)
    future = client.submit(ingest_session, source, out, chunk_frames, force=force, pure=False)
    return future.result()


@task(name="calibrate-identity", task_run_name="calibrate {identity}", **_TASK)
def calibrate_task(
    identity: str,
    members: list[Member],
    template: BodyPlan,
    root: str,
    config: CalibrationConfig,
    recalibrate: bool,
    tolerance: float,
    keypoint_map: dict[str, str] | str | None,
    client: Any = None,
) -> IdentityCalibration:
    """Calibrate (or reuse) one identity's body, solved on the cluster when there is one."""
    args = (identity, members, template, root, config)
    kwargs = {"recalibrate": recalibrate, "tolerance": tolerance, "keypoint_map": keypoint_map}
    if client is None:
        return calibrate_identity(*args, **kwargs)
    return client.submit(calibrate_identity, *args, **kwargs, pure=False).result()


@task(name="fit-session", task_run_name="fit {session}", **_TASK, **_RETRY)
def fit_task(
    session: str,
    tracks: str,
    plan: BodyPlan | str,
    solver: SolverConfig,
    out: str,
    chunk_frames: int | None,
    overlap_frames: int,
    keypoint_map: dict[str, str] | str | None,
    force: bool,
    client: Any = None,
    ik_setup: str | None = None,
) -> SessionOutcome:
    """Fit one session on the cluster (one dask task per time chunk); resumable.

    ``ik_setup``: an OpenSim IK setup whose marker weights and coordinate tasks the fit
    uses (:func:`pipeline.opensim_setup.fit_terms.setup_fit`). ``plan`` ``"auto"``: the
    session's own choice (:func:`pipeline.fit.plan_choice.session_plan`), recorded.
    """
    plan, keypoint_map, choice = session_plan(plan, tracks, keypoint_map)
    solver, tasks = setup_fit(ik_setup, plan, solver)
    report = fit_session(
        tracks,
        plan,
        solver,
        out,
        client=client,
        chunk_frames=chunk_frames,
        overlap_frames=overlap_frames,
        force=force,
        keypoint_map=keypoint_map,
        coordinate_tasks=tasks,
        plan_choice=choice,
    )
    return fit_outcome(session, report)


@task(name="archive-report", **_TASK)
def report_task(fits_root: str, out: str, detailed: int = 3, body_plan: str | None = None) -> str:
    """Write the archive's HTML report (:func:`pipeline.inspect.report.pages.write_archive_report`).

    ``body_plan`` is the run's ``body_plan`` setting: the template the report checks each
    stored calibration against (by sha256), beside the plans stored with the fits.
    """
    from pipeline.inspect.report.pages import write_archive_report

    templates = () if body_plan is None else (resolve_body_plan(body_plan),)
    return str(write_archive_report(fits_root, out, detailed=detailed, templates=templates))


@task(name="export-session", task_run_name="export {fit} as {format}", **_TASK)
def export_task(fit: str, format: str, out: str, overwrite: bool = True) -> str:
    """Run an exporter of :data:`pipeline.export.exporter_registry.EXPORTERS` over a fit store.

    Writes only when the export is stale (its fingerprint record differs from this fit's
    and settings'), so rerunning the flow re-exports just the sessions that changed;
    ``overwrite=False`` refuses to replace an export that is not current.
    """
    if overwrite:
        return str(export(format, fit, out, skip_current=True).files[0])
    return str(export(format, fit, out).files[0])


@task(name="publish-summary", **_TASK)
def publish_task(summary: ArchiveSummary, key: str) -> str:
    """Publish the run's summary as a Prefect markdown artifact (shown in the UI)."""
    markdown = summary.to_markdown()
    create_markdown_artifact(markdown, key=key, description="kinefit archive run summary")
    return markdown


def outputs_of(fit: str, format: str) -> str:
    """Where an export of a fit store goes: beside it, same name, the format's suffix."""
    return str(default_output(fit, format))
