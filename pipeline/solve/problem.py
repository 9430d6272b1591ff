"""A prepared fitting problem: observations, weights and the per-batch evaluation.

:func:`prepare` validates and normalizes the user's targets and weights once;
:func:`evaluate` runs forward kinematics for a batch of poses and returns residuals,
effective (robust) weights and the objective.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from pipeline.bodyplan.model import BodyPlan
from pipeline.kinematics.forward import FKState, fk_state
from pipeline.kinematics.model import KinematicModel, compile_plan
from pipeline.kinematics.rotations import matrix_to_quat, quat_to_matrix
from pipeline.solve.config import SolverConfig
from pipeline.solve.mappers import Identity3D, Mapper, as_mapper

__all__ = ["Evaluation", "Problem", "evaluate", "kabsch_root", "prepare"]


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
    """

    plan: BodyPlan
    model: KinematicModel
    mapper: Mapper
    config: SolverConfig
    obs: np.ndarray
    weight: np.ndarray

    @property
    def n_frames(self) -> int:
        """Number of frames ``T``."""
        return int(self.obs.shape[0])


def prepare(plan: BodyPlan, targets, weights, config: SolverConfig, mapper, dtype=None) -> Problem:
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
    mapper : None, Mapper, Camera or list of Camera
    dtype : numpy dtype, optional
        Working precision of the problem (default ``config.dtype``; the compiled engine
        works in float64 whatever dtype its results are returned in).

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
        raise ValueError(
            f"targets have shape {np.shape(targets)}; expected {expected} for "
            f"{type(mapper).__name__} and a body plan with {nj} joints"
        )
    present = np.isfinite(t).all(axis=-1)  # (T, C, J)
    if dt != np.float64:  # beyond the working precision's range: missing
        present &= (np.abs(np.where(present[..., None], t, 0.0)) <= np.finfo(dt).max).all(-1)
    if weights is None:
        w = np.ones(t.shape[:3])
    else:
        w = np.asarray(weights, dtype=np.float64)
        if w.ndim == 2:
            w = w[:, None]
        if w.shape[0] != t.shape[0] or w.shape[2:] != (nj,) or w.shape[1] not in (1, c):
            raise ValueError(
                f"weights have shape {np.shape(weights)}; expected (T, {nj})"
                + ("" if c == 1 else f" or (T, {c}, {nj})")
                + f" with T = {t.shape[0]}"
            )
        w = np.broadcast_to(w, t.shape[:3]).copy()
        if np.any(w < 0):
            raise ValueError("weights must be >= 0 (0 or NaN marks a missing keypoint)")
        w = np.nan_to_num(w, nan=0.0, posinf=0.0)
    if config.min_confidence > 0:
        w[w < config.min_confidence] = 0.0
    w = np.where(present, w, 0.0) * plan.joint_weight_scalers
    w = np.minimum(w, np.finfo(dt).max)  # absurd weights overflow the cost: flagged frames
    obs = np.where((w > 0)[..., None], t, 0.0)
    return Problem(plan, model, mapper, config, obs.astype(dt), w.astype(dt))


class Evaluation(NamedTuple):
    """Forward pass and objective for a batch of poses."""

    st: FKState
    residual: np.ndarray  # (S, C, J, d), zero where missing
    weight: np.ndarray  # (S, C, J) effective (robust) weights
    dist2: np.ndarray  # (S, C, J) squared residual distances
    cost: np.ndarray  # (S,)


def evaluate(
    prob: Problem,
    frames: np.ndarray,
    root_pos: np.ndarray,
    root_quat: np.ndarray,
    q: np.ndarray,
    need_jac: bool,
) -> Evaluation:
    """Residuals, robust weights and objective of poses against ``frames``' targets.

    Parameters
    ----------
    prob : Problem
    frames : (S,) int
        Frame of each pose.
    root_pos : (S, 3)
    root_quat : (S, 4)
    q : (S, N)
    need_jac : bool
        Keep DOF axes and pivots for a Jacobian.

    Returns
    -------
    Evaluation
    """
    model, cfg = prob.model, prob.config
    free = model.free_base
    rot = quat_to_matrix(root_quat) if free else None
    st = fk_state(model, q, root_pos if free else None, rot, need_axes=need_jac)
    obs = prob.obs[frames]
    w = prob.weight[frames]
    pred = prob.mapper.project(st.positions)
    r = obs - pred
    valid = (w > 0) & np.isfinite(r).all(axis=-1)
    r = np.where(valid[..., None], r, 0.0)
    w = np.where(valid, w, 0.0)
    d2 = np.sum(r * r, axis=-1)
    scale = cfg.loss_scale
    if cfg.loss == "huber":
        e = np.sqrt(d2)
        inside = e <= scale
        rw = np.where(inside, 1.0, scale / np.where(inside, 1.0, e))
        rho2 = np.where(inside, d2, 2.0 * scale * e - scale * scale)
    elif cfg.loss == "cauchy":
        rw = 1.0 / (1.0 + d2 / (scale * scale))
        rho2 = scale * scale * np.log1p(d2 / (scale * scale))
    else:
        rw, rho2 = None, d2
    dq = q - model.neutral
    cost = np.sum(w * rho2, axis=(1, 2)) + cfg.neutral_weight * np.sum(
        model.prior_scale * dq * dq, axis=1
    )
    weff = w if rw is None else (w * rw).astype(model.dtype)
    return Evaluation(st, r, weff, d2, cost)


def kabsch_root(prob: Problem, frames: np.ndarray, q: np.ndarray):
    """Rigid fit of the pose ``q`` (root at identity) onto the observed 3D keypoints.

    ``q`` is ``(S, N)``, or ``(1, N)`` for one pose fitted to every frame.

    Frames with fewer than three observed keypoints get the identity rotation and a
    translation matching the observed centroid (or the origin when none is observed).

    Returns
    -------
    root_pos : (S, 3)
    root_quat : (S, 4)
    """
    model = prob.model
    s = frames.size
    dt = model.dtype
    pos = np.zeros((s, 3), dt)
    quat = np.zeros((s, 4), dt)
    quat[:, 0] = 1.0
    if not model.free_base or not isinstance(prob.mapper, Identity3D):
        return pos, quat
    # float64 throughout: products of far float32 targets overflow the working precision
    local = fk_state(model, q, need_axes=False).positions.astype(np.float64)
    local = np.broadcast_to(local, (s, *local.shape[1:]))  # (S, J, 3)
    target = prob.obs[frames, 0].astype(np.float64)
    w = prob.weight[frames, 0].astype(np.float64)
    wsum = w.sum(axis=1)
    has = (wsum > 0) & np.isfinite(wsum)
    wn = w / np.where(has, wsum, 1.0)[:, None]
    c_local = np.einsum("sj,sjk->sk", wn, local)
    c_target = np.einsum("sj,sjk->sk", wn, target)
    h = np.einsum("sj,sja,sjb->sab", wn, local - c_local[:, None], target - c_target[:, None])
    finite = has & np.isfinite(h).all(axis=(1, 2)) & np.isfinite(c_target).all(axis=1)
    h = np.where(finite[:, None, None], h, np.eye(3))  # SVD raises on non-finite input
    u, sv, vt = np.linalg.svd(h)
    det = np.sign(np.linalg.det(np.matmul(u, vt)))
    fix = np.ones((s, 3))
    fix[:, 2] = det
    rot = np.matmul(vt.transpose(0, 2, 1) * fix[:, None, :], u.transpose(0, 2, 1))
    enough = ((w > 0).sum(axis=1) >= 3) & (sv[:, 1] > 1e-9 * np.maximum(sv[:, 0], 1e-30))
    rot = np.where((finite & enough)[:, None, None], rot, np.eye(3))
    quat = matrix_to_quat(rot).astype(dt)
    pos = np.where(finite[:, None], c_target - np.einsum("sab,sb->sa", rot, c_local), 0.0)
    big = np.finfo(dt).max
    return np.clip(pos, -big, big).astype(dt), quat
