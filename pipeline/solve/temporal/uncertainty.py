"""Each frame's keypoint evidence as information, its noise level, and what it observes.

At a frame's fitted pose the Gauss-Newton normal matrix ``J^T W J`` (``J`` the keypoint
Jacobian of every coordinate ``[root position, root rotation increment, DOFs]``, ``W`` the
observation weights, robust weights included) is the information the keypoints carry
about the pose, up to the noise variance ``s2``: with residuals distributed as
``N(0, s2 / w)`` the frame's posterior covariance is ``s2 (J^T W J + P)^-1`` (``P`` the
neutral prior's diagonal). ``s2`` is estimated from the weighted residuals pooled over
:data:`NOISE_WINDOW` frames either side (frames do not carry enough residuals on their
own), minus the fitted coordinates' degrees of freedom.

A coordinate is *unobservable* in a frame when its keypoint information is below
:data:`OBSERVABLE_MIN`: the weighted RMS displacement of the observed keypoints per unit
change of the coordinate (per radian, or per body size of a slide), in body sizes. A DOF
no observed keypoint hangs below has zero information (the G1's ankle rolls, whose
feet carry no keypoint past the roll axis).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from pipeline.kinematics.forward import jacobian_from_state
from pipeline.solve.mappers import Identity3D
from pipeline.solve.numpy.forward import evaluate
from pipeline.solve.problem import Problem
from pipeline.solve.result import FitResult

__all__ = ["NOISE_WINDOW", "OBSERVABLE_MIN", "Evidence", "frame_evidence", "frame_std"]

#: Frames either side pooled into each frame's residual variance.
NOISE_WINDOW = 15
#: Weighted RMS keypoint displacement per unit coordinate change (body sizes per rad, or
#: per body size) below which a coordinate is unobservable.
OBSERVABLE_MIN = 1e-3
_BATCH = 2048


class Evidence(NamedTuple):
    """Keypoint evidence of every frame (``n = n_root + n_dofs`` coordinates).

    Attributes
    ----------
    information : (T, n, n)
        ``J^T W J`` at the fitted pose (observation units squared per coordinate unit).
    gradient : (T, n)
        ``J^T W r - P (q - neutral)``: minus the objective's half-gradient there (zero
        at an exact optimum).
    prior : (n,)
        Diagonal of the neutral prior's Hessian (zeros on the root).
    variance : (T,)
        Residual variance ``s2`` per unit weight (observation units squared).
    observable : (T, n) bool
        Coordinates with keypoint information at least :data:`OBSERVABLE_MIN`.
    """

    information: np.ndarray
    gradient: np.ndarray
    prior: np.ndarray
    variance: np.ndarray
    observable: np.ndarray


def _information(prob: Problem, result: FitResult, idx: np.ndarray):
    model = prob.model
    ev = evaluate(
        prob,
        idx,
        np.asarray(result.root_position[idx], model.dtype),
        np.asarray(result.root_orientation[idx], model.dtype),
        np.asarray(result.dof_value[idx], model.dtype),
        need_jac=True,
    )
    jac = jacobian_from_state(model, ev.st).astype(np.float64)  # (S, J, 3, n)
    if isinstance(prob.mapper, Identity3D):
        rows = jac[:, None]  # (S, 1, J, 3, n)
    else:
        rows = np.matmul(prob.mapper.jacobian(ev.st.positions), jac[:, None])
    w = ev.weight.astype(np.float64)  # (S, C, J)
    s, n = rows.shape[0], rows.shape[-1]
    # J^T W J and J^T W r as batched BLAS products of the sqrt(W)-scaled rows (one
    # (S, n, rows) x (S, rows, n) matmul instead of an einsum over five axes: ~10x faster)
    root = np.sqrt(np.maximum(w, 0.0))[..., None, None]
    scaled = (rows * root).reshape(s, -1, n)  # (S, C*J*d, n)
    info = np.matmul(scaled.transpose(0, 2, 1), scaled)
    res = ev.residual.astype(np.float64)
    weighted = (res * root[..., 0]).reshape(s, -1, 1)  # sqrt(W) r, matching the rows
    grad = np.matmul(scaled.transpose(0, 2, 1), weighted)[..., 0]
    wr2 = np.sum(w * np.sum(ev.residual.astype(np.float64) ** 2, axis=-1), axis=(1, 2))
    n_obs = np.sum((w > 0) * rows.shape[-2], axis=(1, 2))
    return info, grad, wr2, n_obs, np.sum(w, axis=(1, 2))


def _window_sum(a: np.ndarray) -> np.ndarray:
    """Sum of ``a`` over :data:`NOISE_WINDOW` frames either side of each frame."""
    c = np.concatenate([[0.0], np.cumsum(a)])
    i = np.arange(a.size)
    return c[np.minimum(i + NOISE_WINDOW + 1, a.size)] - c[np.maximum(i - NOISE_WINDOW, 0)]


def frame_evidence(prob: Problem, result: FitResult) -> Evidence:
    """The evidence of every frame of ``result`` (fitted on ``prob``).

    Parameters
    ----------
    prob : Problem
    result : FitResult

    Returns
    -------
    Evidence
    """
    model = prob.model
    t, nr = prob.n_frames, model.n_root
    n = nr + model.n_dofs
    info = np.zeros((t, n, n))
    grad = np.zeros((t, n))
    wr2, dof, wsum = np.zeros(t), np.zeros(t), np.zeros(t)
    for a in range(0, t, _BATCH):
        idx = np.arange(a, min(a + _BATCH, t))
        info[idx], grad[idx], wr2[idx], n_obs, wsum[idx] = _information(prob, result, idx)
        dof[idx] = n_obs
    scale = float(np.sqrt(prob.angle_floor))  # the length scale
    unit = np.concatenate(
        [np.r_[np.ones(3), np.full(3, scale)][:nr], np.where(model.angular, scale, 1.0)]
    )
    diag = np.diagonal(info, axis1=1, axis2=2)
    rms = np.sqrt(diag / np.maximum(wsum, 1e-300)[:, None]) / unit
    observable = rms >= OBSERVABLE_MIN
    free = np.maximum(dof - observable.sum(axis=1), 0.0)  # residual degrees of freedom
    num, den = _window_sum(wr2), _window_sum(free)
    floor = (1e-12 * scale) ** 2
    variance = np.where(den > 0, np.maximum(num / np.maximum(den, 1e-300), floor), floor)
    prior = np.zeros(n)
    prior[nr:] = prob.neutral_weight * np.asarray(model.prior_scale, np.float64)
    dq = np.asarray(result.dof_value, np.float64) - np.asarray(model.neutral, np.float64)
    grad[:, nr:] -= prior[nr:] * dq
    return Evidence(info, grad, prior, variance, observable)


def frame_std(evidence: Evidence) -> np.ndarray:
    """Standard deviation of every coordinate of every frame fitted on its own.

    ``sqrt(diag(s2 (J^T W J + P)^-1))`` (``temporal="none"``); a coordinate whose
    system is singular (no prior, no keypoint) gets ``inf``.

    Parameters
    ----------
    evidence : Evidence

    Returns
    -------
    (T, n) array
    """
    a = evidence.information + np.diag(evidence.prior)
    n = a.shape[-1]
    d = np.sqrt(np.maximum(np.diagonal(a, axis1=1, axis2=2), 1e-300))
    scaled = a / d[:, :, None] / d[:, None, :] + 1e-12 * np.eye(n)  # Jacobi-preconditioned
    inv = np.linalg.inv(scaled)
    with np.errstate(over="ignore"):  # no information at all: inf, replaced below
        var = np.diagonal(inv, axis1=1, axis2=2) / d**2 * evidence.variance[:, None]
    std = np.sqrt(np.maximum(var, 0.0))
    return np.where(np.diagonal(a, axis1=1, axis2=2) > 0, std, np.inf)
