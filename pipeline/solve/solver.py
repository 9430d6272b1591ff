"""Batched Gauss-Newton / Levenberg-Marquardt inverse kinematics.

:func:`solve_frames` and :func:`solve_sequence` hand 3D observations and pixels of
calibrated cameras to the compiled engine (:mod:`pipeline.solve.compiled`, one frame at a
time; cameras: :mod:`pipeline.solve.compiled.projection`) unless ``SolverConfig.engine``
says otherwise, and everything else (other 2D mappers, ``engine="numpy"``) to the numpy
engine, through :mod:`pipeline.solve.dispatch` (as ``solve_sequences`` does). A coupled
plan (driven axes or couplings) runs on the compiled engine too, unless a coordinate
moves subtrees the compiled engine's tree factorization cannot hold
(:mod:`pipeline.kinematics.step_groups`); then on the numpy engine, and asking for the
compiled one explicitly is an error.

The numpy engine is :mod:`pipeline.solve.numpy` (frames in lockstep lanes); the rules
both engines share are :mod:`pipeline.solve.rules`.

Objective (QuickIK's): ``sum_i w_i |target_i - fk_i|^2 + neutral_weight * sum_k scaler_k
(q_k - neutral_k)^2`` with ``w_i`` the observation weight times the joint's weight scaler
(times a per-keypoint weight when given), plus ``sum_d weight_d (q_d - target_d)^2`` for
coordinate tasks;
relative damping ``damping * max(A_ii, 1)``; limits clamped after every step; a frame
stops when its largest applied position and angle updates are under their tolerances.
"""

from __future__ import annotations

from dataclasses import fields, replace

import numpy as np

from pipeline.bodyplan.model import BodyPlan
from pipeline.solve.config import SolverConfig
from pipeline.solve.dispatch import finish, prepare_problem, solve_chained, solve_independent
from pipeline.solve.numpy.pose import Pose, clamp, diagnostics, empty_pose, initial_pose
from pipeline.solve.problem import Problem
from pipeline.solve.result import FitResult
from pipeline.solve.tasks import CoordinateTasks
from pipeline.solve.temporal.motion_model import check_fps
from pipeline.solve.temporal.uncertainty import FrameMoments

__all__ = ["solve_frames", "solve_sequence"]


def _pose_of(result: FitResult, dtype) -> Pose:
    return Pose(
        np.array(result.root_position, dtype),
        np.array(result.root_orientation, dtype),
        np.array(result.dof_value, dtype),
    )


def _restart_pose(prob: Problem, best: Pose, k: int) -> Pose:
    """Start poses of restart ``k`` (1-based), from the best poses so far.

    Restart 1: each frame from the previous frame's best (the last frame's for the
    first); restart 2: the neutral DOFs with the frame's own best root pose (a root-only
    alignment); restart ``k > 2``: from the best of the frame ``k - 1`` places before.
    """
    t = prob.n_frames
    if k == 2:
        q, _ = clamp(prob.model, np.broadcast_to(prob.model.neutral, best.q.shape).copy())
        return Pose(best.root_pos.copy(), best.root_quat.copy(), q.astype(best.q.dtype))
    shift = 1 if k == 1 else k - 1
    return best.take((np.arange(t) - shift) % t)


def _better(
    a: FitResult, ma: FrameMoments | None, b: FitResult, mb: FrameMoments | None
) -> tuple[FitResult, FrameMoments | None]:
    """Per frame, the result (and its moments) with the lower objective (``a`` on ties)."""
    take_b = b.objective < a.objective
    changes = {}
    for f in fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if x is None or y is None:
            continue
        mask = take_b.reshape((-1,) + (1,) * (x.ndim - 1))
        changes[f.name] = np.where(mask, y, x)
    moments = ma.where(take_b, mb) if ma is not None and mb is not None else None
    return replace(a, **changes), moments


def solve_frames(
    plan: BodyPlan,
    targets: np.ndarray,
    weights: np.ndarray | None = None,
    config: SolverConfig | None = None,
    initial=None,
    mapper=None,
    keypoint_weights: np.ndarray | None = None,
    coordinate_tasks: CoordinateTasks | None = None,
) -> FitResult:
    """Fit every frame independently.

    Parameters
    ----------
    plan : BodyPlan
    targets : (T, n_joints, 3) array
        World keypoints, NaN where missing. For 2D observations ``(T, n_joints, 2)``
        with ``mapper=XYView()`` or a :class:`pipeline.cameras.Camera`, or
        ``(T, n_cameras, n_joints, 2)`` with a list of cameras.
    weights : (T, n_joints) array, optional
        Observation weights (confidences); 0 or NaN marks a missing keypoint.
    config : SolverConfig, optional
    initial : FitResult or dict, optional
        Starting pose (``dof_value``, ``root_position``, ``root_orientation``), one per
        frame or one broadcast to all. Cold start from the neutral pose when omitted.
        With ``config.restarts``, every frame is solved again from other starts (the
        previous frame's best, then the neutral DOFs under its own best root) and keeps
        the solution with the lowest objective; ``iterations`` are the kept solve's.
    mapper : None, XYView, pipeline.cameras.Camera or a list of them
        How keypoints are observed (3D when None).
    keypoint_weights : (n_joints,) array, optional
        Per-keypoint weights multiplying every frame's observation weights (OpenSim's
        marker-task weights); 0 leaves a keypoint out.
    coordinate_tasks : CoordinateTasks, optional
        Per-DOF targets with weights (:mod:`pipeline.solve.tasks`), objective terms
        ``weight * (q_d - target)^2``.

    Returns
    -------
    FitResult
    """
    config = config or SolverConfig()
    prob, compiled = prepare_problem(
        plan, targets, weights, config, mapper, keypoint_weights, coordinate_tasks
    )
    start = initial_pose(prob, initial) if initial is not None else None
    result, moments = solve_independent(prob, compiled, start)
    for k in range(1, config.restarts + 1 if prob.n_frames else 1):
        again, more = solve_independent(
            prob, compiled, _restart_pose(prob, _pose_of(result, prob.model.dtype), k)
        )
        result, moments = _better(result, moments, again, more)
    return finish(prob, result, None, False, config.np_dtype, moments)


def solve_sequence(
    plan: BodyPlan,
    targets: np.ndarray,
    weights: np.ndarray | None = None,
    config: SolverConfig | None = None,
    mapper=None,
    fps: float | None = None,
    keypoint_weights: np.ndarray | None = None,
    coordinate_tasks: CoordinateTasks | None = None,
) -> FitResult:
    """Fit consecutive frames, each warm-started from the frames before it.

    Each frame starts from the previous solution (or ``warm_start="velocity"``'s
    prediction). A long sequence is cut into up to ``config.lanes`` segments solved side
    by side (the numpy engine's lockstep lanes; the compiled engine's SIMD lanes, for 3D
    observations of a plan without driven axes, cut at fully observed frames); each
    segment after the first warms up on ``config.warmup_frames`` frames before its start
    (solved and discarded), so every stored frame is warm-started there too.
    ``lanes=1`` solves it as one chain.

    Parameters
    ----------
    plan : BodyPlan
    targets, weights, mapper, keypoint_weights, coordinate_tasks
        As in :func:`solve_frames`.
    config : SolverConfig, optional
    fps : float, optional
        Frame rate (Hz), required by ``config.temporal="smooth"``: the frames' fits are
        then smoothed under a constant-acceleration prior (:mod:`pipeline.solve.temporal`).

    Returns
    -------
    FitResult
        With uncertainties, and velocities when smoothed.
    """
    config = config or SolverConfig()
    if config.temporal == "smooth":
        check_fps(fps)
    prob, compiled = prepare_problem(
        plan, targets, weights, config, mapper, keypoint_weights, coordinate_tasks
    )
    t = prob.n_frames
    if t == 0:
        none = np.zeros(0, np.int8)
        empty = np.zeros((0, plan.n_dofs), bool)
        out = diagnostics(prob, empty_pose(prob.model, 0), np.zeros(0, np.int32), none, empty)
        return finish(prob, out, fps, False, config.np_dtype)
    result, moments = solve_chained(prob, compiled)
    return finish(prob, result, fps, config.temporal == "smooth", config.np_dtype, moments)
