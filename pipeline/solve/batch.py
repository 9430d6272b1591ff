"""Several independent sequences (a chunk's individuals) in one compiled solve.

:func:`solve_sequences` lays the sequences end to end and hands them to the compiled
kernel in one call, each starting cold at its first frame (``Inputs.cold``), so a chunk
with many individuals pays the per-call costs (problem set-up, kernel dispatch, result
buffers) once instead of once per individual. The kernel solves a sequence the same way
whether it is alone or among others, so every result equals :func:`solve_sequence`'s on
that sequence alone (exactly: the same arithmetic in the same order); the temporal result
(uncertainty, smoothing) is then made per sequence, as it would be alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields, replace

import numpy as np

from pipeline.bodyplan.model import BodyPlan
from pipeline.errors import ObservationError
from pipeline.solve.config import SolverConfig
from pipeline.solve.dispatch import finish, prepare_problem, solve_chained
from pipeline.solve.problem import Problem
from pipeline.solve.result import FitResult
from pipeline.solve.solver import solve_sequence
from pipeline.solve.temporal.motion_model import check_fps
from pipeline.solve.temporal.uncertainty import FrameMoments

__all__ = ["solve_sequences"]


def _part(result: FitResult, sl: slice) -> FitResult:
    changes = {
        f.name: getattr(result, f.name)[sl]
        for f in fields(result)
        if getattr(result, f.name) is not None
    }
    return replace(result, **changes)


def _part_problem(prob: Problem, sl: slice) -> Problem:
    return replace(prob, obs=prob.obs[sl], weight=prob.weight[sl])


def solve_sequences(
    plan: BodyPlan,
    targets: Sequence[np.ndarray],
    weights: Sequence[np.ndarray | None] | None = None,
    config: SolverConfig | None = None,
    mapper=None,
    fps: float | None = None,
) -> list[FitResult]:
    """Fit several independent sequences, as :func:`solve_sequence` fits each one.

    Parameters
    ----------
    plan : BodyPlan
    targets : sequence of (T_i, n_joints, 3) arrays
        One sequence per individual (lengths may differ), NaN where missing.
    weights : sequence of (T_i, n_joints) arrays or None, optional
        Each sequence's observation weights (None: all 1 where observed).
    config : SolverConfig, optional
    mapper : optional
        As in :func:`solve_sequence`. Only 3D observations on the compiled engine are
        batched (``mapper=None``, ``engine`` not ``"numpy"``); other problems are solved
        one sequence at a time.
    fps : float, optional
        Frame rate (Hz), required by ``config.temporal="smooth"``.

    Returns
    -------
    list of FitResult
        One per sequence, in order; equal to ``solve_sequence(plan, targets[i],
        weights[i], config, mapper, fps)``.
    """
    config = config or SolverConfig()
    targets = [np.asarray(t) for t in targets]
    weights = list(weights) if weights is not None else [None] * len(targets)
    if len(weights) != len(targets):
        raise ObservationError(
            f"solve_sequences: weights: {len(weights)} arrays for {len(targets)} sequences; "
            "give one per sequence (or None)"
        )
    if config.temporal == "smooth":
        check_fps(fps)
    lengths = [t.shape[0] for t in targets]
    one_by_one = len(targets) < 2 or min(lengths) == 0 or config.engine == "numpy"
    if one_by_one or mapper is not None:  # only 3D on the compiled engine is batched
        return [
            solve_sequence(plan, t, w, config, mapper, fps)
            for t, w in zip(targets, weights, strict=True)
        ]
    for i, (t, w) in enumerate(zip(targets, weights, strict=True)):
        if t.ndim != 3 or t.shape[1:] != (plan.n_joints, 3):
            raise ObservationError(
                f"solve_sequences: targets[{i}] has shape {t.shape}; every sequence must be "
                f"(T, {plan.n_joints}, 3): 3D keypoints of this plan's joints"
            )
        if w is not None and np.shape(w) != t.shape[:2]:
            raise ObservationError(
                f"solve_sequences: weights[{i}] has shape {np.shape(w)}, its targets "
                f"{t.shape[:2]}; give one weight per frame and joint (or None)"
            )
    full = [
        w if w is not None else np.ones(t.shape[:2]) for t, w in zip(targets, weights, strict=True)
    ]
    prob, compiled = prepare_problem(
        plan, np.concatenate(targets), np.concatenate(full), config, None
    )
    starts = np.cumsum([0, *lengths])
    cold = np.zeros(prob.n_frames, np.bool_)
    cold[starts[:-1]] = True
    result, moments = solve_chained(prob, compiled, cold)
    smooth = config.temporal == "smooth"
    out = []
    for a, b in zip(starts[:-1], starts[1:], strict=True):
        sl = slice(int(a), int(b))
        part = None if moments is None else FrameMoments(*(m[sl] for m in moments))
        sub = _part_problem(prob, sl)
        out.append(finish(sub, _part(result, sl), fps, smooth, config.np_dtype, part))
    return out
