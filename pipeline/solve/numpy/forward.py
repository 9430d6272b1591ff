"""Forward pass and objective of a batch of poses (the numpy engine).

The numpy counterpart of :mod:`pipeline.solve.compiled.forward`: forward kinematics of
every lane, residuals against the lanes' frames, robust (IRLS) weights and the objective
of :mod:`pipeline.solve.rules`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from pipeline.kinematics.fk_jacobian import FKState, fk_state
from pipeline.kinematics.rotations import quat_to_matrix
from pipeline.solve.problem import Problem
from pipeline.solve.rules import CAUCHY, HUBER, LOSS_CODES

__all__ = ["Evaluation", "evaluate"]


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
    loss = LOSS_CODES[cfg.loss]
    if loss == HUBER:
        e = np.sqrt(d2)
        inside = e <= scale
        rw = np.where(inside, 1.0, scale / np.where(inside, 1.0, e))
        rho2 = np.where(inside, d2, 2.0 * scale * e - scale * scale)
    elif loss == CAUCHY:
        rw = 1.0 / (1.0 + d2 / (scale * scale))
        rho2 = scale * scale * np.log1p(d2 / (scale * scale))
    else:
        rw, rho2 = None, d2
    dq = q - model.neutral
    cost = np.sum(w * rho2, axis=(1, 2)) + prob.neutral_weight * np.sum(
        model.prior_scale * dq * dq, axis=1
    )
    if prob.task_weight is not None:
        dt = q - prob.task_target[frames]
        cost = cost + np.sum(prob.task_weight * dt * dt, axis=1)
    weff = w if rw is None else (w * rw).astype(model.dtype)
    return Evaluation(st, r, weff, d2, cost)
