"""The writing half of a session fit, run while holding the session's lock.

:func:`fit_stores` decides skip / resume / start over, creates the partial store, runs
the chunk tasks (:mod:`pipeline.fit.chunk`), records failures and publishes the complete
store; :func:`pipeline.fit.fit_session` validates the inputs before it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.bodyplan import BodyPlan, body_plan_sha256, body_plan_to_dict
from pipeline.cluster import run_tasks
from pipeline.errors import FitError
from pipeline.fit.angle_branch import periodic_dofs
from pipeline.fit.chunk import ChunkTask, fit_chunk
from pipeline.fit.view_setup import ViewSetup
from pipeline.fit.world_frame import WorldFrame
from pipeline.provenance import fingerprint as fp
from pipeline.provenance.hashing import canonical_json
from pipeline.solve import CoordinateTasks, SolverConfig
from pipeline.store.atomic import partial_path, publish, remove_store
from pipeline.store.attrs import store_attrs
from pipeline.store.branches import align_chunk_turns
from pipeline.store.chunks import chunk_seconds, done_chunks, finalize, record_failure
from pipeline.store.fit import (
    TIMING_FIELDS,
    FitLayout,
    create_fit_store,
    layout_intact,
)
from pipeline.tracks.mapping import KeypointMapping

__all__ = ["FitReport", "SessionJob", "current_fit", "fit_stores"]


@dataclass(frozen=True)
class FitReport:
    """What :func:`fit_session` did.

    Attributes
    ----------
    out : Path
        The fit store.
    skipped : bool
        The store was current (fingerprint match) and nothing was fitted.
    n_frames, n_individuals, n_chunks : int
    chunks_fitted : tuple of int
        Chunks fitted in this run (others were done by an earlier run).
    seconds : float
        Wall time of this run.
    fingerprint : str
    unmapped_keypoints : tuple of str
        Track keypoints that observe no joint.
    not_converged : int or None
        Frame-individuals the solver did not converge on (stored as a NaN-free best
        effort with ``converged = False``); None for an older store that was skipped.
    """

    out: Path
    skipped: bool
    n_frames: int
    n_individuals: int
    n_chunks: int
    chunks_fitted: tuple[int, ...]
    seconds: float
    fingerprint: str
    unmapped_keypoints: tuple[str, ...] = ()
    not_converged: int | None = None


@dataclass(frozen=True)
class SessionJob:
    """One validated session fit: what :func:`fit_stores` writes, and the report's counts.

    Built by :func:`pipeline.fit.fit_session` once the tracks, plan and mapping are checked.

    Attributes
    ----------
    out : Path
        Fit store to publish.
    plan : BodyPlan
    config : SolverConfig
    tracks_path : str
        Absolute path of the tracks store.
    tracks_attrs : dict
        The tracks store's attrs (fps, unit, session, ...), copied into the fit's.
    mapping : KeypointMapping
    layout : FitLayout
    fingerprint, input_sha, signature : str
        The fit's fingerprint, the tracks' content digest and their stat signature.
    chunk_task : callable
        Called as ``chunk_task(ChunkTask)`` once per chunk (:func:`fit_chunk`).
    views : ViewSetup or None
        How a 2D session is observed (:mod:`pipeline.fit.view_setup`); None for 3D. Its
        cameras are already turned into the plan's frame.
    frame : WorldFrame or None
        The turn of the observations into the body plan's frame
        (:mod:`pipeline.fit.world_frame`); None: none.
    coordinate_tasks : CoordinateTasks or None
        Per-DOF targets with weights of every frame (an OpenSim IK setup's).
    plan_choice : dict or None
        How ``body_plan: auto`` chose the plan (the ``body_plan_choice`` attr).
    """

    out: Path
    plan: BodyPlan
    config: SolverConfig
    tracks_path: str
    tracks_attrs: dict[str, Any]
    mapping: KeypointMapping
    layout: FitLayout
    fingerprint: str
    input_sha: str
    signature: str
    chunk_task: Callable[[ChunkTask], Any] = fit_chunk
    views: ViewSetup | None = None
    frame: WorldFrame | None = None
    coordinate_tasks: CoordinateTasks | None = None
    plan_choice: dict[str, Any] | None = None

    def report(self, t0: float, **fields: Any) -> FitReport:
        """A :class:`FitReport` of this job; ``fields`` are the run's own."""
        return FitReport(
            out=self.out,
            n_frames=self.layout.n_frames,
            n_individuals=len(self.layout.individuals),
            n_chunks=self.layout.n_chunks,
            unmapped_keypoints=self.mapping.unmapped_keypoints,
            fingerprint=self.fingerprint,
            seconds=time.perf_counter() - t0,
            **fields,
        )


def current_fit(out: Path, fingerprint: str) -> dict[str, Any] | None:
    """The attrs of the complete fit store at ``out`` if its fingerprint is ``fingerprint``."""
    attrs = store_attrs(out)
    return attrs if attrs.get("complete") and attrs.get("fingerprint") == fingerprint else None


def _provenance(job: SessionJob) -> dict[str, Any]:
    attrs, layout = job.tracks_attrs, job.layout
    return {
        "body_plan": canonical_json(body_plan_to_dict(job.plan)),
        "body_plan_sha256": body_plan_sha256(job.plan),
        "solver_config": job.config.to_dict(),
        "fingerprint": job.fingerprint,
        "input_sha256": job.input_sha,
        "kinefit_version": fp.kinefit_version(),
        "created": dt.datetime.now(dt.UTC).isoformat(),
        "complete": False,
        "tracks_store": job.tracks_path,
        **{key: attrs.get(key) for key in ("fps", "time_unit", "session", "unit", "up_axis")},
        "keypoint_map": [list(p) for p in job.mapping.pairs()],
        "unmapped_keypoints": list(job.mapping.unmapped_keypoints),
        "missing_joints": list(job.mapping.missing_joints),
        "chunk_frames": layout.chunk_frames,
        "overlap_frames": layout.overlap_frames,
        "n_chunks": layout.n_chunks,
        **(job.views.attrs() if job.views else {}),
        **(job.views.units(job.plan.unit) if job.views else {"residual_unit": attrs.get("unit")}),
        **(job.frame.attrs() if job.frame else {}),
        **({"body_plan_choice": job.plan_choice} if job.plan_choice else {}),
    }


def _resumable(partial: Path, fingerprint: str, layout: FitLayout) -> bool:
    """A partial store of the same inputs, fully created (not killed mid-creation)."""
    attrs = store_attrs(partial)
    return (
        attrs.get("created") is True
        and layout_intact(partial)
        and attrs.get("fingerprint") == fingerprint
        and attrs.get("chunk_frames") == layout.chunk_frames
        and attrs.get("overlap_frames") == layout.overlap_frames
        and attrs.get("n_chunks") == layout.n_chunks
    )


def _after(job: SessionJob, stop: int) -> int:
    """Frames a chunk ending at ``stop`` reads after itself: the overlap when smoothing."""
    if job.config.temporal != "smooth":
        return 0
    return max(0, min(job.layout.overlap_frames, job.layout.n_frames - stop))


def _start(job: SessionJob, force: bool) -> Path:
    """The partial store to fit into: resumed when it matches, else created anew."""
    partial = partial_path(job.out)
    if force or not _resumable(partial, job.fingerprint, job.layout):
        remove_store(partial)
        try:
            create_fit_store(partial, job.layout, _provenance(job))
        except OSError:
            remove_store(partial)  # a half-created store is useless; free its space
            raise
    return partial


def _failed(job: SessionJob, partial: Path, failures: list) -> FitError:
    """Record failed chunks in the partial store; the error that names them."""
    n_chunks = job.layout.n_chunks
    failed = sorted(arguments[0].k for arguments, _ in failures)
    reasons = sorted({f"{type(e).__name__}: {e}" for _, e in failures})
    with contextlib.suppress(OSError):  # a full or read-only disk may refuse even this
        record_failure(partial, failed, reasons)
    error = FitError(
        f"{job.out}: {len(failed)} of {n_chunks} chunks failed ({failed}); the "
        f"{n_chunks - len(failed)} finished ones are kept in {partial}; rerun to "
        f"resume. Errors: {' | '.join(reasons[:3])}"
        + (f" (and {len(reasons) - 3} more)" if len(reasons) > 3 else "")
    )
    error.__cause__ = failures[0][1]
    return error


def fit_stores(
    job: SessionJob,
    client: Any,
    force: bool,
    progress: Callable[[int, int], None] | None,
    t0: float,
) -> FitReport:
    """The part of :func:`pipeline.fit.fit_session` that writes, holding the session lock."""
    current = None if force else current_fit(job.out, job.fingerprint)
    if current is not None:
        return job.report(
            t0, skipped=True, chunks_fitted=(), not_converged=current.get("not_converged")
        )
    partial = _start(job, force)
    done = done_chunks(partial)
    layout = job.layout
    tasks = [
        ChunkTask(
            job.tracks_path,
            str(partial),
            job.plan,
            job.config,
            job.mapping,
            k,
            *layout.bounds(k),
            layout.overlap_frames,
            views=job.views,
            fps=job.tracks_attrs.get("fps"),
            after_frames=_after(job, layout.bounds(k)[1]),
            rotation=None if job.frame is None or job.frame.identity else job.frame.rotation,
            coordinate_tasks=job.coordinate_tasks,
        )
        for k in range(layout.n_chunks)
        if not done[k]
    ]
    if progress:
        progress(0, len(tasks))
    _, failures = run_tasks(job.chunk_task, [(task,) for task in tasks], client, progress)
    if failures:
        raise _failed(job, partial, failures)
    missing = np.flatnonzero(~done_chunks(partial))
    if missing.size:  # never publish a short store, whatever the tasks reported
        raise FitError(
            f"{job.out}: chunks {missing.tolist()} finished without their done marker; the "
            f"partial store {partial} is kept; rerun to fit them"
        )
    seconds = chunk_seconds(partial)
    wall = time.perf_counter() - t0
    fitted = tuple(task.k for task in tasks)
    timings = {name: float(np.nansum(seconds[:, i])) for i, name in enumerate(TIMING_FIELDS)}
    frames_now = sum(task.stop - task.start for task in tasks)
    timings.update(
        wall_s=wall,
        chunks_this_run=len(fitted),
        frames_per_s=frames_now / wall if wall > 0 else None,
    )
    attrs = {"timings": timings, "tracks_signature": job.signature}
    align_chunk_turns(partial, layout, periodic_dofs(job.plan), job.plan.lower, job.plan.upper)
    not_converged = finalize(partial, layout, attrs)
    publish(partial, job.out)
    return job.report(t0, skipped=False, chunks_fitted=fitted, not_converged=not_converged)
