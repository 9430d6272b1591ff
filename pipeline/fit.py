"""Fit a whole session: the solver mapped over time chunks with dask, into a zarr store.

:func:`fit_session` plans one task per time chunk of the output store. A task
(:func:`fit_chunk`, run on a dask worker) reads its frames straight from the tracks store,
plus ``overlap_frames`` frames before them to warm the solver up, solves every individual
separately with :func:`pipeline.solve.solve_sequence`, keeps its own frames, and writes
them with a region write aligned to the store's chunks; the warm-up solve goes to the
seam diagnostic. Only paths and small settings travel in the graph, never arrays.

The store is created up front (metadata only) under a temporary name beside ``out``
(``.<name>.partial``); a chunk is done once its marker is set, so a rerun after a failure
fits only the missing chunks. When every chunk is done the seams are summarized, the
timings written, and the store renamed to ``out``. A complete store whose fingerprint
matches is left alone unless ``force``.

Reliability: one run per session at a time (a lock file beside ``out``,
:mod:`pipeline.store.lock`: a second run fails at once with
:class:`~pipeline.store.lock.SessionLockedError`); a chunk write that fails with a
transient ``OSError`` is retried (:func:`pipeline.store.faults.retry_io`); failed chunks
are recorded in the partial store's ``failed`` attr; the store is published only when
every chunk's done marker is set; a folder that cannot be written (read-only, full) is one
:class:`FitError` naming it.

Test hooks (:mod:`pipeline.store.faults`): ``KINEFIT_FAULT_CHUNKS`` fails listed chunk
tasks before any work (once each with ``KINEFIT_FAULT_DIR``); ``KINEFIT_FAULT_IO``
injects ``OSError`` while writing a chunk.
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

from pipeline.bodyplan import BodyPlan, body_plan_sha256, body_plan_to_dict, load_body_plan
from pipeline.cluster import run_tasks
from pipeline.fit_chunk import ChunkTask, fit_chunk
from pipeline.solve import SolverConfig
from pipeline.store import fingerprint as fp
from pipeline.store.atomic import partial_path, publish, remove_store
from pipeline.store.faults import FAULT_CHUNKS_ENV, FAULT_DIR_ENV, FAULT_IO_ENV, InjectedFault
from pipeline.store.fit_store import (
    TIMING_FIELDS,
    FitLayout,
    chunk_seconds,
    create_fit_store,
    done_chunks,
    finalize,
    json_text,
    layout_intact,
    record_failure,
    store_attrs,
)
from pipeline.store.lock import SessionLockedError, session_lock
from pipeline.store.tracks_store import open_tracks
from pipeline.tracks.mapping import map_keypoints
from pipeline.tracks.scale import check_scale, reference_points
from pipeline.tracks.schema import TracksError

DEFAULT_OVERLAP_FRAMES = 16
__all__ = [
    "FAULT_CHUNKS_ENV",
    "FAULT_DIR_ENV",
    "FAULT_IO_ENV",
    "ChunkTask",
    "FitError",
    "FitReport",
    "InjectedFault",
    "SessionLockedError",
    "fit_chunk",
    "fit_session",
]


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


#: Bytes a file name may have (NAME_MAX of common filesystems), and the most that kinefit
#: adds to the output's name for the files beside it (``.<name>.old-1234abcd``).
NAME_MAX, NAME_EXTRA = 255, 14


def _check_out(out: Path, tracks_path: str) -> None:
    """Refuse to replace anything at ``out`` that is not a kinefit fit store."""
    size = len(out.name.encode())
    if size + NAME_EXTRA > NAME_MAX:
        raise FitError(
            f"{out}: the output name is too long ({size} bytes): the fit is built beside it "
            f"as .{out.name[:20]}....partial and names may have {NAME_MAX} bytes; use a name "
            f"of at most {NAME_MAX - NAME_EXTRA} bytes"
        )
    if out.resolve() == Path(tracks_path):
        raise FitError(f"{out}: the output would overwrite the input tracks store")
    if out.exists() and "fingerprint" not in store_attrs(out):
        raise FitError(
            f"{out}: exists and is not a kinefit fit store; refusing to replace it "
            "(choose another --out or remove it)"
        )


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


def fit_session(
    tracks: str | Path,
    plan: BodyPlan | str | Path,
    config: SolverConfig,
    out: str | Path,
    client: Any = None,
    chunk_frames: int | None = None,
    overlap_frames: int = DEFAULT_OVERLAP_FRAMES,
    *,
    force: bool = False,
    keypoint_map: dict[str, str] | str | Path | None = None,
    progress: Callable[[int, int], None] | None = None,
    check_units: bool = True,
) -> FitReport:
    """Fit every individual of a session; write the fit store ``out``.

    Parameters
    ----------
    tracks : str or Path
        Tracks zarr store (:func:`pipeline.store.write_tracks`); 3-D positions.
    plan : BodyPlan, str or Path
        Body plan or its JSON file.
    config : SolverConfig
    out : str or Path
        Fit store to create.
    client : distributed.Client, optional
        Cluster to run the chunk tasks on; default: one after another in this process.
    chunk_frames : int, optional
        Frames per time chunk and per task; default the tracks store's time chunk.
    overlap_frames : int
        Frames before each chunk solved to warm it up (their disagreement with the
        previous chunk is stored as ``seam_disagreement``).
    force : bool
        Refit even if ``out`` is current; start over instead of resuming.
    keypoint_map : mapping, str or Path, optional
        Track keypoint -> joint renames, or a YAML file of them.
    progress : callable, optional
        ``progress(done, total)`` after each finished chunk (and once at the start).
    check_units : bool
        Refuse tracks whose size is far from the body plan's (a length-unit mismatch,
        :func:`pipeline.tracks.scale.check_scale`); False skips the check.

    Returns
    -------
    FitReport

    Raises
    ------
    TracksError
        Malformed tracks, no keypoint maps to a joint, an all-NaN session, infinite
        values, unreadable chunks, or tracks in another length unit than the plan;
        nothing is written.
    FitError
        Some chunk tasks failed; the finished ones are kept for a rerun.
    """
    t0 = time.perf_counter()
    tracks_path, out = str(Path(tracks).resolve()), Path(out)
    ds = open_tracks(tracks_path)
    if ds.sizes["space"] != 3:
        raise TracksError(
            f"{tracks_path}: space has {ds.sizes['space']} components; fit_session fits 3-D "
            "tracks (x, y, z)"
        )
    _check_out(out, tracks_path)
    plan = plan if isinstance(plan, BodyPlan) else load_body_plan(plan)
    mapping = map_keypoints(
        ds["keypoint"].values, plan.joint_names, keypoint_map, source=tracks_path
    )
    chunk_frames = int(ds["position"].chunks[0][0] if chunk_frames is None else chunk_frames)
    if chunk_frames < 1 or overlap_frames < 0:
        raise ValueError(
            f"chunk_frames must be >= 1 and overlap_frames >= 0, got "
            f"{chunk_frames} and {overlap_frames}"
        )
    layout = FitLayout(
        time=np.asarray(ds["time"].values, dtype=np.float64),
        individuals=tuple(ds["individual"].values.tolist()),
        joints=plan.joint_names,
        dofs=plan.dof_names,
        chunk_frames=chunk_frames,
        overlap_frames=overlap_frames,
    )
    mapped = [k for k in mapping.joint_keypoint if k >= 0]
    joints = [j for j, k in enumerate(mapping.joint_keypoint) if k >= 0]
    reference = reference_points(plan, joints) if check_units else None
    scan = fp.scan_input(tracks_path, ds, mapped, client, reference)
    check_scale(scan.scale, plan, source=tracks_path, unit=ds.attrs.get("unit"))
    input_sha = scan.digest
    fingerprint = fp.fit_fingerprint(
        input_sha, body_plan_sha256(plan), config.to_dict(), mapping.pairs()
    )
    report = dict(
        out=out,
        n_frames=layout.n_frames,
        n_individuals=len(layout.individuals),
        n_chunks=layout.n_chunks,
        fingerprint=fingerprint,
        unmapped_keypoints=mapping.unmapped_keypoints,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        with session_lock(out):
            args = (plan, config, tracks_path, ds, mapping, layout, fingerprint, input_sha)
            return _fit_locked(out, args, client, force, progress, report, t0)
    except OSError as exc:
        raise FitError(
            f"{out}: cannot write the fit store in {out.parent}: {exc.strerror or exc}"
            + (f" ({exc.filename})" if exc.filename else "")
            + "; anything already stored there is unchanged"
        ) from exc


def _fit_locked(out: Path, args: tuple, client, force, progress, report, t0) -> FitReport:
    """The part of :func:`fit_session` that writes, run while holding the session lock.

    ``args`` are :func:`_provenance`'s: plan, config, tracks path, tracks, mapping,
    layout, fingerprint and input digest.
    """
    plan, config, tracks_path, _, mapping, layout, fingerprint, _ = args
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
    not_converged = finalize(partial, layout, {"timings": timings})
    publish(partial, out)
    return FitReport(
        skipped=False,
        chunks_fitted=fitted,
        seconds=time.perf_counter() - t0,
        not_converged=not_converged,
        **report,
    )
