"""A prepared fitting problem, the input of both engines.

:func:`prepare` validates and normalizes the user's targets and weights once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline.bodyplan.model import BodyPlan
from pipeline.errors import ObservationError
from pipeline.kinematics.plan_arrays import KinematicModel, compile_plan
from pipeline.solve.config import SolverConfig
from pipeline.solve.mappers import Mapper, as_mapper
from pipeline.solve.tasks import CoordinateTasks, check_keypoint_weights, named_keypoint_weights

__all__ = ["Problem", "prepare"]


@dataclass(frozen=True, eq=False)
class Problem:
    """Validated inputs of one solve.

    Attributes
    ----------
    plan : BodyPlan
    model : KinematicModel
    mapper : Mapper
    config : SolverConfig
    obs : (T, C, J, d)
        Observations, zero where missing.
    weight : (T, C, J)
        Observation weights times joint weight scalers; zero where missing.
    neutral_weight : float
        The effective prior weight (``SolverConfig.effective``).
    position_tolerance : float
        The effective position tolerance (length units).
    angle_floor : float
        Floor of an angle coordinate's relative damping, ``length_scale**2``.
    task_weight : (N,) array or None
        Coordinate-task weights per DOF (0: no task), in observation units squared per
        DOF unit squared; None when no DOF has a task.
    task_target : (T, N) array or None
        Coordinate-task targets per frame and DOF (DOF units); None with ``task_weight``.
    cold_refine : callable or None
        ``cold_refine(prob, frames, pose) -> Pose``: how a cold start pose is refined
        before the fit (the solver's front end sets it: through two or more cameras, the
        3D fit of what they triangulate); None leaves the neutral start as it is.
    """

    plan: BodyPlan
    model: KinematicModel
    mapper: Mapper
    config: SolverConfig
    obs: np.ndarray
    weight: np.ndarray
    neutral_weight: float
    position_tolerance: float
    angle_floor: float
    task_weight: np.ndarray | None = None
    task_target: np.ndarray | None = None
    cold_refine: Callable[[Problem, np.ndarray, Any], Any] | None = None

    @property
    def n_frames(self) -> int:
        """Number of frames ``T``."""
        return int(self.obs.shape[0])


def prepare(
    plan: BodyPlan,
    targets,
    weights,
    config: SolverConfig,
    mapper,
    dtype=None,
    keypoint_weights=None,
    coordinate_tasks: CoordinateTasks | None = None,
) -> Problem:
    """Validate targets/weights and build a :class:`Problem`.

    Parameters
    ----------
    plan : BodyPlan
    targets : array
        ``(T, J, 3)`` for 3D; ``(T, J, 2)`` for :class:`XYView` or one camera;
        ``(T, C, J, 2)`` for ``C`` cameras. NaN marks a missing keypoint.
    weights : array or None
        ``(T, J)`` (or ``(T, C, J)`` with cameras); 0 or NaN means missing. Values below
        ``config.min_confidence`` count as missing.
    config : SolverConfig
    mapper : None, Mapper, pipeline.cameras.Camera or a list of them
    dtype : numpy dtype, optional
        Working precision of the problem (default ``config.dtype``; the compiled engine
        works in float64 whatever dtype its results are returned in).
    keypoint_weights : (J,) array, optional
        Per-keypoint weights (OpenSim's marker-task weights) multiplying every frame's
        observation weights; 0 leaves a keypoint out of the fit. ``config.keypoint_weights``
        (by joint name) multiplies them too.
    coordinate_tasks : CoordinateTasks, optional
        Per-DOF targets with weights, objective terms ``weight * (q_d - target)^2``;
        ``config.coordinate_tasks`` (constant ones by DOF name) join them.

    Returns
    -------
    Problem
    """
    mapper = as_mapper(mapper)
    dt = np.dtype(dtype) if dtype is not None else config.np_dtype
    model = compile_plan(plan, dt)
    t = np.asarray(targets, dtype=np.float64)
    nj, c, d = plan.n_joints, mapper.n_views, mapper.dim
    if t.ndim == 3 and c == 1:
        t = t[:, None]
    expected = f"(T, {nj}, {d})" if c == 1 else f"(T, {c}, {nj}, {d})"
    if t.ndim != 4 or t.shape[1:] != (c, nj, d):
        raise ObservationError(
            f"targets have shape {np.shape(targets)}; expected {expected} for "
            f"{type(mapper).__name__} and a body plan with {nj} joints"
        )
    finite = np.isfinite(t)
    present = finite[..., 0].copy()  # (T, C, J); ``all`` over an axis of 2 or 3 is slower
    for i in range(1, d):
        present &= finite[..., i]
    if dt != np.float64:  # beyond the working precision's range: missing
        present &= (np.abs(np.where(present[..., None], t, 0.0)) <= np.finfo(dt).max).all(-1)
    if weights is None:
        w = np.ones(t.shape[:3])
    else:
        w = np.asarray(weights, dtype=np.float64)
        if w.ndim == 2:
            w = w[:, None]
        if w.shape[0] != t.shape[0] or w.shape[2:] != (nj,) or w.shape[1] not in (1, c):
            raise ObservationError(
                f"weights have shape {np.shape(weights)}; expected (T, {nj})"
                + ("" if c == 1 else f" or (T, {c}, {nj})")
                + f" with T = {t.shape[0]}"
            )
        w = np.broadcast_to(w, t.shape[:3]).copy()
        if np.any(w < 0):
            raise ObservationError("weights must be >= 0 (0 or NaN marks a missing keypoint)")
        w = np.nan_to_num(w, nan=0.0, posinf=0.0)
    if config.min_confidence > 0:
        w[w < config.min_confidence] = 0.0
    if keypoint_weights is not None:
        w = w * check_keypoint_weights(keypoint_weights, nj)
    if config.keypoint_weights:
        w = w * named_keypoint_weights(config.keypoint_weights, plan)
    w = np.where(present, w, 0.0) * plan.joint_weight_scalers
    w = np.minimum(w, np.finfo(dt).max)  # absurd weights overflow the cost: flagged frames
    obs = np.where((w > 0)[..., None], t, 0.0)
    nw, tol, floor = config.effective(plan)
    rs2 = float(mapper.residual_scale) ** 2  # pixels through cameras: weights against pixels
    nw *= rs2
    obs, w = obs.astype(dt, copy=False), w.astype(dt, copy=False)
    tw = tt = None
    if config.coordinate_tasks:
        coordinate_tasks = _with_config_tasks(config.coordinate_tasks, coordinate_tasks)
    if coordinate_tasks is not None:
        tw, tt = coordinate_tasks.arrays(plan, t.shape[0])
        tw, tt = (tw * rs2).astype(dt), tt.astype(dt)
    return Problem(plan, model, mapper, config, obs, w, nw, tol, floor, tw, tt)


def _with_config_tasks(
    constant: dict[str, tuple[float, float]], given: CoordinateTasks | None
) -> CoordinateTasks:
    """``SolverConfig.coordinate_tasks`` joined with the solver argument's (which wins)."""
    weight = {k: float(v[0]) for k, v in constant.items()}
    target: dict[str, float | np.ndarray] = {k: float(v[1]) for k, v in constant.items()}
    if given is not None:
        weight.update(given.weight)
        target.update(given.target)
    return CoordinateTasks(weight, target)
