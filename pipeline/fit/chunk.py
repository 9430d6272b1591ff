"""One chunk task of a session fit: read its frames, solve them, write them (on a worker).

:func:`fit_chunk` reads its frames straight from the tracks store, plus
``overlap_frames`` frames before them to warm the solver up (and, when smoothing,
``after_frames`` after them, so that the smoother sees what a whole-session fit would
see: :func:`pipeline.solve.temporal.motion_model.overlap_frames`), solves its individuals'
sequences in one batched call (:func:`pipeline.solve.solve_sequences`; 2D views one
individual at a time), keeps its own frames, and writes
them with a region write aligned to the store's chunks (retried on transient I/O errors);
the warm-up solve goes to the seam diagnostic (when smoothing, only the half of the
overlap nearest the seam: the older half is near the chunk's own edge). Only paths and
small settings travel in the task, never arrays.

``write`` is the function that stores a chunk's values (:func:`pipeline.store.chunks.
write_chunk` by default); tests hand in a wrapper that fails on purpose to exercise the
retry and resume paths.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pipeline.bodyplan import BodyPlan
from pipeline.fit.angle_branch import keep_on_branch
from pipeline.fit.view_setup import ViewSetup
from pipeline.fit.world_frame import rotate_positions
from pipeline.solve import (
    CoordinateTasks,
    FitResult,
    SolverConfig,
    solve_sequence,
    solve_sequences,
)
from pipeline.store.atomic import retry_io
from pipeline.store.chunks import mark_done, write_chunk
from pipeline.store.fit import TIME_VARIABLES
from pipeline.store.tracks import read_frames
from pipeline.tracks.confidence import confidence_weights
from pipeline.tracks.mapping import KeypointMapping
from pipeline.tracks.schema import CONFIDENCE_DIMS, DIMS

__all__ = ["ChunkTask", "fit_chunk"]


@dataclass(frozen=True)
class ChunkTask:
    """Everything one chunk task needs: paths and small settings, no arrays."""

    tracks: str
    out: str
    plan: BodyPlan
    config: SolverConfig
    mapping: KeypointMapping
    k: int
    start: int
    stop: int
    overlap_frames: int
    views: ViewSetup | None = None
    fps: float | None = None
    after_frames: int = 0
    rotation: tuple[tuple[float, ...], ...] | None = None
    """Tracks -> plan turn of 3-D positions (:mod:`pipeline.fit.world_frame`); None: none."""
    coordinate_tasks: CoordinateTasks | None = None
    """Constant per-DOF targets with weights (an OpenSim IK setup's coordinate tasks)."""


def _values(
    results: list[FitResult], keep: slice, reprojection: list[np.ndarray]
) -> dict[str, np.ndarray]:
    """The store's time variables from one result per individual (fields share the names).

    Individuals go on the store's ``individual`` axis (after ``time``; last for
    ``fitted_position``, whose store layout is ``(time, space, keypoint, individual)``).
    """
    values = {}
    for name in TIME_VARIABLES:
        parts = [getattr(r, name)[keep] for r in results]
        if name == "fitted_position":
            values[name] = np.stack(parts, axis=-1).transpose(0, 2, 1, 3)
        else:
            values[name] = np.stack(parts, axis=1)
    if reprojection:  # 2D fits: (time, view, keypoint, individual)
        values["reprojection_error"] = np.stack([r[keep] for r in reprojection], axis=-1)
    return values


def fit_chunk(
    task: ChunkTask, write: Callable[..., None] = write_chunk
) -> tuple[int, tuple[float, float, float, float]]:
    """Fit one time chunk and write it into the partial store (runs on a worker).

    Parameters
    ----------
    task : ChunkTask
    write : callable
        ``write(path, k, (start, stop), values, seam)`` stores the chunk's values; retried
        on transient ``OSError`` (:func:`pipeline.store.atomic.retry_io`).

    Returns
    -------
    k : int
        The chunk index.
    seconds : tuple of 4 float
        Read, solve, write and total seconds.
    """
    t0 = time.perf_counter()
    lo = max(task.start - task.overlap_frames, 0)
    dims = task.views.dims if task.views else (DIMS, CONFIDENCE_DIMS)
    hi = task.stop + task.after_frames
    position = read_frames(task.tracks, "position", dims[0], lo, hi)
    confidence = read_frames(task.tracks, "confidence", dims[1], lo, hi)
    if task.rotation is not None and task.views is None:  # cameras are turned instead
        position = rotate_positions(position, np.asarray(task.rotation), axis=1)
    t1 = time.perf_counter()
    keep = slice(task.start - lo, task.stop - lo)
    per_individual, seams, reprojection = [], [], []
    if task.views is None:  # 3D: every individual in one batched solve
        targets = [
            task.mapping.gather(position[..., i], axis=2).transpose(0, 2, 1)
            for i in range(position.shape[-1])
        ]
        weights = [
            confidence_weights(task.mapping.gather(confidence[..., i], axis=1), x)
            for i, x in enumerate(targets)
        ]
        if task.coordinate_tasks is None:
            per_individual = solve_sequences(task.plan, targets, weights, task.config, fps=task.fps)
        else:  # tasks run on the numpy engine, one sequence at a time
            per_individual = [
                solve_sequence(
                    task.plan,
                    x,
                    w,
                    task.config,
                    fps=task.fps,
                    coordinate_tasks=task.coordinate_tasks,
                )
                for x, w in zip(targets, weights, strict=True)
            ]
    else:
        for i in range(position.shape[-1]):
            result, error = task.views.solve(
                task.plan,
                task.config,
                task.mapping,
                position[..., i],
                confidence[..., i],
                fps=task.fps,
                coordinate_tasks=task.coordinate_tasks,
            )
            reprojection.append(error)
            per_individual.append(result)
    per_individual = [  # whole turns only: the same poses, one branch per coordinate
        dataclasses.replace(r, dof_value=keep_on_branch(r.dof_value, task.plan))
        for r in per_individual
    ]
    for result in per_individual:
        seam = np.full((max(task.overlap_frames, 1), task.plan.n_dofs), np.nan)
        if task.start > lo:
            seam[-(task.start - lo) :] = result.dof_value[: task.start - lo]
        if task.after_frames:  # smoothed: the older half sees this chunk's own edge
            seam[: seam.shape[0] - -(-(task.start - lo) // 2)] = np.nan
        seams.append(seam)
    t2 = time.perf_counter()

    values = _values(per_individual, keep, reprojection)
    seam = np.stack(seams, axis=1) if task.k > 0 and task.overlap_frames > 0 else None

    def store(attempt: int) -> tuple[float, float, float, float]:
        write(task.out, task.k, (task.start, task.stop), values, seam)
        t3 = time.perf_counter()
        seconds = (t1 - t0, t2 - t1, t3 - t2, t3 - t0)
        mark_done(task.out, task.k, seconds)
        return seconds

    return task.k, retry_io(store, f"{task.out}: chunk {task.k}")
