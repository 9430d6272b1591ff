"""Each frame's keypoint evidence as information, its noise level, and what it observes.

At a frame's fitted pose the Gauss-Newton normal matrix ``J^T W J`` (``J`` the keypoint
Jacobian of every coordinate ``[root position, root rotation increment, DOFs]``, ``W`` the
observation weights, robust weights included) is the information the keypoints carry
about the pose, up to the noise variance ``s2``: with residuals distributed as
``N(0, s2 / w)`` the frame's posterior covariance is ``s2 (J^T W J + P)^-1`` (``P`` the
neutral prior's diagonal). ``s2`` is estimated from the weighted residuals pooled over
:data:`NOISE_WINDOW` frames either side (frames do not carry enough residuals on their
own), minus the fitted coordinates' degrees of freedom; a frame with no residual that
near (inside a long gap) takes the whole session's.

A coordinate is *unobservable* in a frame when its keypoint information is below
:data:`OBSERVABLE_MIN`: the weighted RMS displacement of the observed keypoints per unit
change of the coordinate (per radian, or per body size of a slide), in body sizes. A DOF
no observed keypoint hangs below has zero information (the G1's ankle rolls, whose
feet carry no keypoint past the roll axis).
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import numpy as np

from pipeline.kinematics.fk_jacobian import jacobian_from_state
from pipeline.solve.mappers import Identity3D
from pipeline.solve.numpy.forward import evaluate
from pipeline.solve.problem import Problem
from pipeline.solve.result import FitResult

__all__ = [
    "NOISE_WINDOW",
    "OBSERVABLE_MIN",
    "FrameMoments",
    "frame_moments",
    "frame_uncertainty",
    "structural_observable",
]

#: Frames either side pooled into each frame's residual variance.
NOISE_WINDOW = 15
#: Weighted RMS keypoint displacement per unit coordinate change (body sizes per rad, or
#: per body size) below which a coordinate is unobservable.
OBSERVABLE_MIN = 1e-3
_BATCH = 2048


class FrameMoments(NamedTuple):
    """What a frame's own uncertainty needs, without the full normal matrices.

    The compiled engine returns these from its kernel
    (:mod:`pipeline.solve.compiled.precision`); :func:`frame_moments` computes them from
    explicit Jacobians for the other engines.

    Attributes
    ----------
    information : (T, n)
        Diagonal of ``J^T W J``.
    inverse : (T, n)
        Diagonal of ``(J^T W J + P)^-1`` (``inf`` with neither information nor prior).
    weighted_sq : (T,)
        ``sum w |r|^2`` (observation units squared).
    weight : (T,)
        ``sum w``.
    rows : (T,)
        Observed residual rows (3 per keypoint, 2 per keypoint and view).
    """

    information: np.ndarray
    inverse: np.ndarray
    weighted_sq: np.ndarray
    weight: np.ndarray
    rows: np.ndarray

    def where(self, take: np.ndarray, other: FrameMoments) -> FrameMoments:
        """Per frame, ``other``'s moments where ``take`` (T,) is True, else these."""
        return FrameMoments(
            *(
                np.where(take.reshape((-1,) + (1,) * (a.ndim - 1)), b, a)
                for a, b in zip(self, other, strict=True)
            )
        )


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
    # J^T W J as a batched BLAS product of the sqrt(W)-scaled rows (one
    # (S, n, rows) x (S, rows, n) matmul instead of an einsum over five axes: ~10x faster)
    root = np.sqrt(np.maximum(w, 0.0))[..., None, None]
    scaled = (rows * root).reshape(s, -1, n)  # (S, C*J*d, n)
    info = np.matmul(scaled.transpose(0, 2, 1), scaled)
    wr2 = np.sum(w * np.sum(ev.residual.astype(np.float64) ** 2, axis=-1), axis=(1, 2))
    n_obs = np.sum((w > 0) * rows.shape[-2], axis=(1, 2))
    return info, wr2, n_obs, np.sum(w, axis=(1, 2))


def _window_sum(a: np.ndarray) -> np.ndarray:
    """Sum of ``a`` over :data:`NOISE_WINDOW` frames either side of each frame."""
    c = np.concatenate([[0.0], np.cumsum(a)])
    i = np.arange(a.size)
    return c[np.minimum(i + NOISE_WINDOW + 1, a.size)] - c[np.maximum(i - NOISE_WINDOW, 0)]


def _scale_units(prob: Problem) -> tuple[float, np.ndarray]:
    """The length scale and every coordinate's observability unit."""
    model = prob.model
    scale = float(np.sqrt(prob.angle_floor))
    unit = np.concatenate(
        [np.r_[np.ones(3), np.full(3, scale)][: model.n_root], np.where(model.angular, scale, 1.0)]
    )
    return scale, unit


def _noise(prob: Problem, diag, wr2, rows, wsum) -> tuple[np.ndarray, np.ndarray]:
    """Observability (T, n) and pooled residual variance (T,) from the moments."""
    scale, unit = _scale_units(prob)
    rms = np.sqrt(np.maximum(diag, 0.0) / np.maximum(wsum, 1e-300)[:, None]) / unit
    observable = rms >= OBSERVABLE_MIN
    free = np.maximum(rows - observable.sum(axis=1), 0.0)  # residual degrees of freedom
    num, den = _window_sum(wr2), _window_sum(free)
    floor = (1e-12 * scale) ** 2
    # no residual in the window (a long gap): the session's own noise level, not the floor
    # (which would make the prior-held poses there exact measurements for the smoother)
    total = float(np.sum(free))
    session = max(float(np.sum(wr2)) / total, floor) if total > 0 else floor
    variance = np.where(den > 0, np.maximum(num / np.maximum(den, 1e-300), floor), session)
    return observable, variance


def _prior(prob: Problem) -> np.ndarray:
    model = prob.model
    prior = np.zeros(model.n_root + model.n_dofs)
    prior[model.n_root :] = prob.neutral_weight * np.asarray(model.prior_scale, np.float64)
    if prob.task_weight is not None:
        prior[model.n_root :] += prob.task_weight
    return prior


def frame_moments(prob: Problem, result: FitResult) -> FrameMoments:
    """:class:`FrameMoments` of ``result`` from the numpy engine's Jacobians.

    Parameters
    ----------
    prob : Problem
    result : FitResult

    Returns
    -------
    FrameMoments
    """
    t = prob.n_frames
    n = prob.model.n_root + prob.model.n_dofs
    info = np.zeros((t, n))
    inverse = np.zeros((t, n))
    wr2, rows, wsum = np.zeros(t), np.zeros(t), np.zeros(t)
    prior = _prior(prob)
    for a in range(0, t, _BATCH):
        idx = np.arange(a, min(a + _BATCH, t))
        full, wr2[idx], rows[idx], wsum[idx] = _information(prob, result, idx)
        info[idx] = np.diagonal(full, axis1=1, axis2=2)
        inverse[idx] = _inverse_diagonal(full + np.diag(prior))
    return FrameMoments(info, inverse, wr2, wsum, rows)


def _inverse_diagonal(a: np.ndarray) -> np.ndarray:
    """``diag(a^-1)`` of SPD matrices ``a`` (S, n, n), Jacobi-regularized; inf where empty."""
    n = a.shape[-1]
    diag = np.diagonal(a, axis1=1, axis2=2)
    d = np.sqrt(np.maximum(diag, 1e-300))
    scaled = a / d[:, :, None] / d[:, None, :] + 1e-12 * np.eye(n)  # Jacobi-preconditioned
    inv = np.diagonal(np.linalg.inv(scaled), axis1=1, axis2=2)
    with np.errstate(over="ignore", divide="ignore"):
        return np.where(diag > 0, inv / d**2, np.inf)


def frame_uncertainty(prob: Problem, moments: FrameMoments) -> tuple[np.ndarray, np.ndarray]:
    """Standard deviations and observability of every frame fitted on its own.

    ``sqrt(diag(s2 (J^T W J + P)^-1))`` (``temporal="none"``), ``s2`` the pooled residual
    variance; ``inf`` where a coordinate has neither prior nor keypoint.

    Parameters
    ----------
    prob : Problem
    moments : FrameMoments

    Returns
    -------
    std : (T, n) array
    observable : (T, n) bool array
    """
    observable, variance = _noise(
        prob, moments.information, moments.weighted_sq, moments.rows, moments.weight
    )
    with np.errstate(invalid="ignore"):
        std = np.sqrt(np.maximum(moments.inverse * variance[:, None], 0.0))
    return std, observable


def structural_observable(prob: Problem) -> np.ndarray:
    """Coordinates with an observed keypoint below them, per frame (no Jacobian).

    What ``SolverConfig.uncertainty=False`` reports as ``dof_observable``: a DOF is
    observable when some keypoint of a joint strictly below its own is observed in any
    view; the root's coordinates when any keypoint is.

    Parameters
    ----------
    prob : Problem

    Returns
    -------
    (T, n_root + n_dofs) bool array
    """
    model = prob.model
    parent, dof_joint = np.asarray(model.parent), np.asarray(model.dof_joint)
    moved = _moved(parent.astype(np.int64).tobytes(), dof_joint.astype(np.int64).tobytes())
    seen = np.any(np.asarray(prob.weight) > 0, axis=1)  # (T, J)
    dof = (seen.astype(np.float32) @ moved) > 0.5  # float: a BLAS product
    root = np.repeat(seen.any(axis=1, keepdims=True), model.n_root, axis=1)
    return np.concatenate([root, dof], axis=1)


@lru_cache(maxsize=64)
def _moved(parent: bytes, dof_joint: bytes) -> np.ndarray:
    """``(J, n_dofs)`` float32: 1 where joint ``j`` lies strictly below DOF ``d``'s joint.

    Keyed on the tree's bytes (int64 ``parent`` and ``dof_joint``) and cached: the
    tree walk costs a third of a millisecond, which a short fit (OpenSim's 121-frame
    trials) would pay on every call.
    """
    up_of = np.frombuffer(parent, np.int64)
    nj = up_of.size
    below = np.zeros((nj, nj), bool)  # below[j, i]: joint j lies strictly below joint i
    rows, up = np.arange(nj), up_of.copy()
    while (up >= 0).any():  # one tree level per pass
        ok = up >= 0
        below[rows[ok], up[ok]] = True
        up = np.where(ok, up_of[np.maximum(up, 0)], -1)
    moved = below[:, np.frombuffer(dof_joint, np.int64)].astype(np.float32)
    moved.flags.writeable = False
    return moved
