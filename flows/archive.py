"""Prefect flows over an archive: ingest, fit, reprocess (the scheduled job), export.

``reprocess_archive`` (what the CLI and Python callers run) quiets the library logs and
runs the flow ``reprocess_archive_flow``.

``reprocess_archive`` starts ONE Dask cluster for the run and hands its scheduler address
to the ``ingest_archive`` and ``fit_archive`` subflows, which connect to it. Sessions are
processed concurrently up to ``chunking.concurrent_sessions``; a session that fails is
reported in the summary and does not stop the others. Stores are passed between tasks as
paths, never as arrays.

No ``from __future__ import annotations`` here: Prefect builds each flow's parameter model
from its annotations, and in a deployment's run process string annotations of pydantic
models cannot be resolved.
"""

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from prefect import flow, get_run_logger  # noqa: TID251 - flows/ is where prefect lives
from prefect.futures import as_completed  # noqa: TID251
from prefect.task_runners import ThreadPoolTaskRunner  # noqa: TID251

from flows.logs import quiet_library_logs
from flows.progress import advance
from flows.tasks import (
    calibrate_task,
    discover_task,
    export_task,
    fit_task,
    ingest_task,
    outputs_of,
    publish_task,
    report_task,
)
from pipeline.archive.discover import discover_sessions, session_store, tracks_sessions
from pipeline.archive.policy import report_is_stale
from pipeline.archive.summary import ArchiveSummary, SessionOutcome
from pipeline.bodyplan import load_body_plan, resolve_body_plan
from pipeline.calibrate import CalibrationConfig
from pipeline.calibrate.identity import archive_identities, session_plans
from pipeline.cluster import ClusterConfig, dask_client
from pipeline.config import ArchiveConfig, ChunkingConfig, RunConfig, SolverSettings
from pipeline.config.ik_setups import IKSetups
from pipeline.errors import SessionsFailed
from pipeline.fit.plan_choice import AUTO
from pipeline.store import DEFAULT_CHUNK_FRAMES
from pipeline.store.atomic import check_writable

#: Key of the summary artifact (one artifact, a new version per run).
SUMMARY_ARTIFACT = "kinefit-archive-summary"
_RUNNER = ThreadPoolTaskRunner(max_workers=32)


@dataclass(frozen=True)
class Ingested:
    """Result of :func:`ingest_archive`.

    Attributes
    ----------
    tracks : dict
        Session name -> tracks store, for every session that is ready to fit.
    failures : tuple of SessionOutcome
        Sessions that could not be discovered or ingested.
    written : int
        Sessions (re)written in this run; the others were current.
    """

    tracks: dict[str, str] = field(default_factory=dict)
    failures: tuple[SessionOutcome, ...] = ()
    written: int = 0


def _run_windowed(
    submit: Callable[[Any], Any], items: Sequence[Any], limit: int
) -> Iterator[tuple[Any, Any]]:
    """Submit ``submit(item)`` with at most ``limit`` running; yield (item, future) as done."""
    pending: dict[Any, Any] = {}
    for item in items:
        if len(pending) >= limit:
            done = next(as_completed(list(pending)))
            yield pending.pop(done), done
        pending[submit(item)] = item
    for done in as_completed(list(pending)):
        yield pending.pop(done), done


def _error(future: Any) -> BaseException | None:
    future.wait()
    if future.state.is_completed():
        return None
    result = future.result(raise_on_failure=False)
    return result if isinstance(result, BaseException) else RuntimeError(str(future.state))


@flow(name="ingest-archive", task_runner=_RUNNER)
def ingest_archive(
    archive: ArchiveConfig,
    tracks_root: str,
    chunk_frames: int = DEFAULT_CHUNK_FRAMES,
    cluster: ClusterConfig | str | None = None,
    force: bool = False,
    concurrency: int = 4,
) -> Ingested:
    """Discover an archive's sessions and ingest each into ``<tracks_root>/<name>.zarr``.

    Unchanged files (same content, reader and options) are not rewritten.
    """
    logger = get_run_logger()
    try:
        sources = discover_task(archive)
    except Exception as exc:  # noqa: BLE001 - reported as the run's one failure
        logger.error("cannot discover sessions in %s: %s", archive.path, exc)
        return Ingested(failures=(SessionOutcome.failure("*", "discover", exc),))
    logger.info("%d session(s) in %s", len(sources), archive.path)
    tracks, failures, written = {}, [], 0
    with dask_client(cluster) as client:

        def submit(source: Any) -> Any:
            out = str(session_store(tracks_root, source.name))
            return ingest_task.submit(source, out, chunk_frames, force, client)

        # Without a cluster, files are read one at a time: HDF5/netCDF readers are not
        # thread-safe within one process.
        limit = concurrency if client is not None else 1
        advance("ingest", 0, len(sources))
        for n, (source, future) in enumerate(_run_windowed(submit, sources, limit), 1):
            error = _error(future)
            advance("ingest", n, len(sources))
            if error is None:
                report = future.result()
                tracks[source.name] = str(report.out)
                written += not report.skipped
                what = "current" if report.skipped else f"ingested {report.n_frames} frames"
                logger.info("[%d/%d] %s: %s", n, len(sources), source.name, what)
            else:
                failures.append(SessionOutcome.failure(source.name, "ingest", error))
                logger.error("[%d/%d] %s: ingest failed: %s", n, len(sources), source.name, error)
    return Ingested(dict(sorted(tracks.items())), tuple(failures), written)


@flow(name="fit-archive", task_runner=_RUNNER)
def fit_archive(
    tracks_root: str,
    body_plan: str,
    solver: SolverSettings,  # type: ignore[valid-type]
    fits_root: str,
    cluster: ClusterConfig | str | None = None,
    chunking: ChunkingConfig | None = None,
    keypoint_map: dict[str, str] | str | None = None,
    sessions: list[str] | None = None,
    force: bool = False,
    plans: dict[str, str] | None = None,
    ik_setup: IKSetups | None = None,
) -> list[SessionOutcome]:
    """Fit the stale sessions of ``tracks_root`` into ``<fits_root>/<name>.zarr``.

    Each session's fingerprint (input, body plan, solver, kinefit version) decides: a
    current fit is skipped, anything else is (re)fitted, resuming finished chunks. The
    sessions share one Dask cluster; up to ``chunking.concurrent_sessions`` run at once.
    ``plans`` gives sessions their own (calibrated) body-plan file instead of ``body_plan``
    (``"auto"``: each session's choice, :func:`pipeline.fit.plan_choice.session_plan`);
    ``ik_setup`` gives them OpenSim IK setups whose marker weights and coordinate tasks
    their fits use.
    """
    logger = get_run_logger()
    chunking = chunking or ChunkingConfig()
    plan = body_plan if body_plan == AUTO else resolve_body_plan(body_plan)  # auto: per session
    solver_config = RunConfig(solver=solver).solver_config
    own_plans = {name: load_body_plan(path) for name, path in (plans or {}).items()}
    found = tracks_sessions(tracks_root)
    names = sorted(found) if sessions is None else list(sessions)
    outcomes = []
    with dask_client(cluster) as client:

        def submit(name: str) -> Any:
            tracks = str(session_store(tracks_root, name))
            out = str(session_store(fits_root, name))
            return fit_task.submit(
                name,
                tracks,
                own_plans.get(name, plan),
                solver_config,
                out,
                chunking.chunk_frames,
                chunking.overlap_frames,
                keypoint_map,
                force,
                client,
                None if ik_setup is None else ik_setup.for_session(name),
            )

        windows = _run_windowed(submit, names, chunking.concurrent_sessions)
        advance("fit", 0, len(names))
        for n, (name, future) in enumerate(windows, 1):
            error = _error(future)
            advance("fit", n, len(names))
            if error is None:
                outcome = future.result()
                rms = "n/a" if outcome.rms is None else f"{outcome.rms:.4g}"
                logger.info(
                    "[%d/%d] %s: %s, %d frames, median RMS %s",
                    n,
                    len(names),
                    name,
                    outcome.status,
                    outcome.frames,
                    rms,
                )
            else:
                outcome = SessionOutcome.failure(name, "fit", error)
                logger.error("[%d/%d] %s: fit failed: %s", n, len(names), name, error)
            outcomes.append(outcome)
    return sorted(outcomes, key=lambda o: o.session)


def _calibrate_stage(
    config: RunConfig, tracks: dict[str, str], client: Any
) -> tuple[dict[str, str], list[SessionOutcome]]:
    """Calibrate every identity (config ``calibration``); the plan file of each session.

    Returns the calibrated plan per session and the sessions whose identity could not be
    calibrated (they are not fitted). Sessions of several identities keep the template.
    """
    settings = config.calibration
    if settings.mode == "none" or not tracks:
        return {}, []
    logger = get_run_logger()
    individuals: dict[str, dict[str, str]] = {}
    if settings.mode == "per_identity":
        try:
            individuals = {s.name: dict(s.individuals) for s in discover_sessions(config.archive)}
        except Exception as exc:  # noqa: BLE001 - ingest already reported it
            logger.warning("identities from the manifest unavailable: %s", exc)
    groups = archive_identities(tracks, individuals, per_session=settings.mode == "per_session")
    template = resolve_body_plan(config.body_plan)
    cal_config = CalibrationConfig(
        n_frames=settings.n_frames,
        min_frames=settings.min_frames,
        method=settings.method,
        solver=config.solver_config,
    )
    paths, failures = {}, []
    for identity, members in groups.items():
        try:
            done = calibrate_task(
                identity,
                members,
                template,
                str(config.outputs.root),
                cal_config,
                settings.recalibrate,
                settings.tolerance,
                config.keypoint_map,
                client,
            )
        except Exception as exc:  # noqa: BLE001 - reported per session, the others go on
            logger.error("calibration of %s failed: %s", identity, exc)
            failures += [SessionOutcome.failure(m.session, "calibrate", exc) for m in members]
            continue
        paths[identity] = str(done.path)
        logger.info("%s: %s", identity, "reused" if done.reused else "calibrated")
        if done.flagged:
            logger.warning(
                "%s: sessions %s disagree with its other sessions' size by more than %.0f%%",
                identity,
                ", ".join(done.flagged),
                100 * settings.tolerance,
            )
    plans, mixed = session_plans(groups, paths)
    for name in mixed:
        logger.warning("%s: individuals of several identities; fitted with the template", name)
    return plans, failures


def reprocess_archive(
    config: RunConfig, force: bool = False, verbose: bool = False
) -> ArchiveSummary:
    """Run the flow reprocess-archive once, printing kinefit's lines only unless ``verbose``.

    Before the flow starts, Prefect's console, distributed's and OpenSim's logs are
    quieted for the rest of the process as ``kinefit reprocess`` quiets them
    (:func:`flows.logs.quiet_library_logs`; every line still reaches the Prefect API).
    ``verbose=True`` leaves all logging as it is (the library logs come back, and any
    logging configuration of the caller rules). The flow itself is
    :func:`reprocess_archive_flow` (what ``kinefit serve`` deploys).

    Returns
    -------
    ArchiveSummary
        As :func:`reprocess_archive_flow`; :class:`~pipeline.errors.SessionsFailed` too.
    """
    quiet_library_logs(verbose)
    return reprocess_archive_flow(config, force)


@flow(name="reprocess-archive")
def reprocess_archive_flow(config: RunConfig, force: bool = False) -> ArchiveSummary:
    """Ingest, fit the stale sessions, report: the scheduled job.

    Returns the run's :class:`~pipeline.archive.summary.ArchiveSummary` (sessions fitted /
    skipped / failed, frames, frames per second, worst sessions by RMS), also published
    as the markdown artifact ``kinefit-archive-summary``. If a session failed, the other
    sessions' results are kept, the summary is still published, and the run ends Failed:
    :class:`~pipeline.errors.SessionsFailed` is raised with the summary as ``.summary``.
    """
    t0 = time.perf_counter()
    outputs = config.outputs
    check_writable(outputs.root, "the outputs")  # fail now, not after every session
    with dask_client(config.cluster) as client:
        address = None if client is None else client.scheduler.address
        ingested = ingest_archive(
            config.archive,
            str(outputs.tracks_dir),
            config.chunking.tracks_chunk_frames,
            cluster=address,
            force=force,
            concurrency=max(config.chunking.concurrent_sessions, 2),
        )
        plans, calibration_failures = _calibrate_stage(config, ingested.tracks, client)
        failed = {o.session for o in calibration_failures}
        t1 = time.perf_counter()
        outcomes = fit_archive(
            str(outputs.tracks_dir),
            config.body_plan,
            config.solver,
            str(outputs.fits_dir),
            cluster=address,
            chunking=config.chunking,
            keypoint_map=config.keypoint_map,
            sessions=[name for name in ingested.tracks if name not in failed],
            force=force,
            plans=plans,
            ik_setup=config.ik_setup,
        )
        outcomes = outcomes + calibration_failures
        fit_seconds = time.perf_counter() - t1
    fitted = [o for o in outcomes if o.status == "fitted" and o.fit]
    for format in outputs.exports:  # every fit, so a missing or stale export is redone
        for outcome in (o for o in outcomes if o.status != "failed" and o.fit):
            export_task(outcome.fit, format, outputs_of(outcome.fit, format))
    report = None
    stale = report_is_stale(fitted, outputs.report_path)  # nothing new: keep the report
    if outputs.write_report and stale and any(o.status != "failed" for o in outcomes):
        report = report_task(
            str(outputs.fits_dir),
            str(outputs.report_path),
            outputs.report_detailed,
            body_plan=None if config.body_plan == AUTO else config.body_plan,
        )
    elif outputs.write_report and outputs.report_path.exists():
        report = str(outputs.report_path)
    summary = ArchiveSummary(
        tuple(sorted(ingested.failures + tuple(outcomes), key=lambda o: o.session)),
        fit_seconds=fit_seconds,
        seconds=time.perf_counter() - t0,
        unit=next((o.unit for o in outcomes if o.unit not in (None, "unknown")), None),
        report=report,
    )
    publish_task(summary, SUMMARY_ARTIFACT)
    if summary.failed:  # the run is recorded as Failed; the summary travels in the error
        failed = [s.session for s in summary.sessions if s.status == "failed"]
        raise SessionsFailed(
            summary,
            f"{summary.failed} of {len(summary.sessions)} session(s) failed: "
            + ", ".join(failed[:5])
            + (f" and {len(failed) - 5} more" if len(failed) > 5 else ""),
        )
    return summary


@flow(name="export-session")
def export_session(fit: str, format: str = "csv", out: str | None = None) -> str:
    """Run an exporter (:data:`pipeline.export.exporter_registry.EXPORTERS`) over one fit store."""
    return export_task(fit, format, out or outputs_of(fit, format))
