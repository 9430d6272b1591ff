"""The writing half of a session fit, run while holding the session's lock.

:func:`fit_stores` decides skip / resume / start over, creates the partial store, runs
the chunk tasks (:mod:`pipeline.fit_chunk`), records failures and publishes the complete
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

from pipeline.bodyplan import body_plan_sha256, body_plan_to_dict
from pipeline.cluster import run_tasks
from pipeline.fit_chunk import ChunkTask, fit_chunk
from pipeline.store import fingerprint as fp
from pipeline.store.atomic import partial_path, publish, remove_store
from pipeline.store.fit_chunks import chunk_seconds, done_chunks, finalize, record_failure
from pipeline.store.fit_store import (
    TIMING_FIELDS,
    FitLayout,
    create_fit_store,
    json_text,
    layout_intact,
    store_attrs,
)

__all__ = ["FitError", "FitReport", "fit_stores"]


class FitError(RuntimeError):
    """A fit that could not finish.

    Some chunk tasks failed (the partial store keeps the finished ones for a rerun), or
    the output folder cannot be written.
    """


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


def _provenance(plan, config, tracks_path, ds, mapping, layout, fingerprint, input_sha):
    return {
        "body_plan": json_text(body_plan_to_dict(plan)),
        "body_plan_sha256": body_plan_sha256(plan),
        "solver_config": config.to_dict(),
        "fingerprint": fingerprint,
        "input_sha256": input_sha,
        "kinefit_version": fp.kinefit_version(),
        "created": dt.datetime.now(dt.UTC).isoformat(),
        "complete": False,
        "tracks_store": tracks_path,
        "fps": ds.attrs.get("fps"),
        "time_unit": ds.attrs.get("time_unit"),
        "session": ds.attrs.get("session"),
        "unit": ds.attrs.get("unit"),
        "up_axis": ds.attrs.get("up_axis"),
        "keypoint_map": [list(p) for p in mapping.pairs()],
        "unmapped_keypoints": list(mapping.unmapped_keypoints),
        "missing_joints": list(mapping.missing_joints),
        "chunk_frames": layout.chunk_frames,
        "overlap_frames": layout.overlap_frames,
        "n_chunks": layout.n_chunks,
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


def fit_stores(
    out: Path,
    args: tuple,
    client: Any,
    force: bool,
    progress: Callable[[int, int], None] | None,
    report: dict[str, Any],
    t0: float,
) -> FitReport:
    """The part of :func:`pipeline.fit.fit_session` that writes, holding the session lock.

    ``args`` are :func:`_provenance`'s: plan, config, tracks path, tracks, mapping,
    layout, fingerprint and input digest.
    """
    plan, config, tracks_path, _, mapping, layout, fingerprint, _ = args
    signature = report.pop("signature")
    current = store_attrs(out)
    if not force and current.get("complete") and current.get("fingerprint") == fingerprint:
        return FitReport(
            skipped=True,
            chunks_fitted=(),
            seconds=time.perf_counter() - t0,
            not_converged=current.get("not_converged"),
            **report,
        )
    partial = partial_path(out)
    attrs = _provenance(*args)
    if force or not _resumable(partial, fingerprint, layout):
        remove_store(partial)
        try:
            create_fit_store(partial, layout, attrs)
        except OSError:
            remove_store(partial)  # a half-created store is useless; free its space
            raise
    done = done_chunks(partial)
    tasks = [
        (
            ChunkTask(
                tracks_path,
                str(partial),
                plan,
                config,
                mapping,
                k,
                *layout.bounds(k),
                layout.overlap_frames,
            ),
        )
        for k in range(layout.n_chunks)
        if not done[k]
    ]
    if progress:
        progress(0, len(tasks))
    _, failures = run_tasks(fit_chunk, tasks, client, progress)
    if failures:
        failed = sorted(args[0].k for args, _ in failures)
        reasons = sorted({f"{type(e).__name__}: {e}" for _, e in failures})
        with contextlib.suppress(OSError):  # a full or read-only disk may refuse even this
            record_failure(partial, failed, reasons)
        raise FitError(
            f"{out}: {len(failed)} of {layout.n_chunks} chunks failed ({failed}); the "
            f"{layout.n_chunks - len(failed)} finished ones are kept in {partial}; rerun to "
            f"resume. Errors: {' | '.join(reasons[:3])}"
            + (f" (and {len(reasons) - 3} more)" if len(reasons) > 3 else "")
        ) from failures[0][1]
    missing = np.flatnonzero(~done_chunks(partial))
    if missing.size:  # never publish a short store, whatever the tasks reported
        raise FitError(
            f"{out}: chunks {missing.tolist()} finished without their done marker; the "
            f"partial store {partial} is kept; rerun to fit them"
        )
    seconds = chunk_seconds(partial)
    wall = time.perf_counter() - t0
    fitted = tuple(args[0].k for args in tasks)
    timings = {name: float(np.nansum(seconds[:, i])) for i, name in enumerate(TIMING_FIELDS)}
    frames_now = sum(layout.bounds(k)[1] - layout.bounds(k)[0] for k in fitted)
    timings.update(
        wall_s=wall,
        chunks_this_run=len(fitted),
        frames_per_s=frames_now / wall if wall > 0 else None,
    )
    not_converged = finalize(partial, layout, {"timings": timings, "tracks_signature": signature})
    publish(partial, out)
    return FitReport(
        skipped=False,
        chunks_fitted=fitted,
        seconds=time.perf_counter() - t0,
        not_converged=not_converged,
        **report,
    )
