"""Compiled forward kinematics and objective of one frame.

Same semantics as :func:`pipeline.kinematics.fk_jacobian.fk_state`,
walking the joints in tree order one at a time.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from pipeline.kinematics.plan_arrays import HINGE, SLIDE, SWING1
from pipeline.solve.compiled.compilers import NOREFCOUNT_JIT
from pipeline.solve.compiled.driven import fk_steps
from pipeline.solve.compiled.so3 import axis_angle, expmap_and_left_jacobian
from pipeline.solve.compiled.tables import Tables
from pipeline.solve.rules import CAUCHY, HUBER, INLINE

__all__ = ["advance_half_angles", "fk", "fk_half", "half_angles", "objective"]

#: Largest half-angle step (rad) that :func:`advance_half_angles` takes by its Taylor
#: series; beyond it, and for every angle of a new start pose, the library sine and cosine.
#: At 0.03 the series' first omitted terms are below 1e-19.
TAYLOR_HALF_STEP = 0.03
# the series' nested factors (multiplications: a division costs as much as a whole term)
_S3, _S5, _S7 = 1.0 / 6.0, 1.0 / 20.0, 1.0 / 42.0
_C4, _C6, _C8 = 1.0 / 12.0, 1.0 / 30.0, 1.0 / 56.0


@nb.njit(**INLINE)
def _load33(a: np.ndarray, j: int) -> tuple:
    return (
        a[j, 0, 0], a[j, 0, 1], a[j, 0, 2],
        a[j, 1, 0], a[j, 1, 1], a[j, 1, 2],
        a[j, 2, 0], a[j, 2, 1], a[j, 2, 2],
    )  # fmt: skip


@nb.njit(**INLINE)
def _mul33(a: tuple, b: tuple) -> tuple:
    return (
        a[0] * b[0] + a[1] * b[3] + a[2] * b[6],
        a[0] * b[1] + a[1] * b[4] + a[2] * b[7],
        a[0] * b[2] + a[1] * b[5] + a[2] * b[8],
        a[3] * b[0] + a[4] * b[3] + a[5] * b[6],
        a[3] * b[1] + a[4] * b[4] + a[5] * b[7],
        a[3] * b[2] + a[4] * b[5] + a[5] * b[8],
        a[6] * b[0] + a[7] * b[3] + a[8] * b[6],
        a[6] * b[1] + a[7] * b[4] + a[8] * b[7],
        a[6] * b[2] + a[7] * b[5] + a[8] * b[8],
    )


@nb.njit(**INLINE)
def _mix(r: tuple, al: int, c: float, s: float) -> tuple:
    """``r @ R(e_al, angle)``: columns ``al+1``, ``al+2`` rotate into each other."""
    if al == 0:
        return (
            r[0], c * r[1] + s * r[2], c * r[2] - s * r[1],
            r[3], c * r[4] + s * r[5], c * r[5] - s * r[4],
            r[6], c * r[7] + s * r[8], c * r[8] - s * r[7],
        )  # fmt: skip
    if al == 1:
        return (
            c * r[0] - s * r[2], r[1], c * r[2] + s * r[0],
            c * r[3] - s * r[5], r[4], c * r[5] + s * r[3],
            c * r[6] - s * r[8], r[7], c * r[8] + s * r[6],
        )  # fmt: skip
    return (
        c * r[0] + s * r[1], c * r[1] - s * r[0], r[2],
        c * r[3] + s * r[4], c * r[4] - s * r[3], r[5],
        c * r[6] + s * r[7], c * r[7] - s * r[6], r[8],
    )  # fmt: skip


@nb.njit(**NOREFCOUNT_JIT)
def half_angles(q: np.ndarray, half: np.ndarray) -> None:
    """``half = (cos(q / 2), sin(q / 2))`` ``(2, N)`` of the DOF values ``q`` ``(N,)``."""
    for k in range(q.shape[0]):
        half[0, k] = math.cos(0.5 * q[k])
        half[1, k] = math.sin(0.5 * q[k])


@nb.njit(**INLINE)
def advance_half_angles(
    q: np.ndarray, q_new: np.ndarray, half: np.ndarray, half_new: np.ndarray
) -> None:
    """``half_new``: :func:`half_angles` of ``q_new`` from those of ``q`` (a solver step).

    A half-step ``d = (q_new - q) / 2`` of at most :data:`TAYLOR_HALF_STEP` turns the
    known cosine and sine by the angle-addition formulas with ``cos d``, ``sin d`` from
    their Taylor series, which costs a tenth of a library call; a larger one calls the
    library. Each advance adds a few ulps of rounding, so callers start every frame from
    :func:`half_angles`.
    """
    for k in range(q.shape[0]):
        d = 0.5 * (q_new[k] - q[k])
        if abs(d) <= TAYLOR_HALF_STEP:
            d2 = d * d
            sd = d * (1.0 - d2 * _S3 * (1.0 - d2 * _S5 * (1.0 - d2 * _S7)))
            cd = 1.0 - d2 * 0.5 * (1.0 - d2 * _C4 * (1.0 - d2 * _C6 * (1.0 - d2 * _C8)))
            c, s = half[0, k], half[1, k]
            half_new[0, k] = c * cd - s * sd
            half_new[1, k] = s * cd + c * sd
        else:
            half_new[0, k] = math.cos(0.5 * q_new[k])
            half_new[1, k] = math.sin(0.5 * q_new[k])


@nb.njit(**NOREFCOUNT_JIT)
def fk(
    tb: Tables,
    q: np.ndarray,
    root_pos: np.ndarray,
    root_rot: np.ndarray,
    need_axes: bool,
    rot: np.ndarray,
    org: np.ndarray,
    pos: np.ndarray,
    axes: np.ndarray,
    pivots: np.ndarray,
    tmp: np.ndarray,
    half: np.ndarray,
) -> None:
    """Forward pass of one pose: :func:`half_angles` into ``half``, then :func:`fk_half`.

    Parameters
    ----------
    tb : Tables
    q : (N,) DOF values
    root_pos : (3,)
    root_rot : (3, 3)
    need_axes : bool
        Fill ``axes`` and ``pivots`` (for the normal equations).
    rot : (J, 3, 3) out
        World frame of each joint after its own DOFs.
    org : (J, 3) out
        Joint origin after its own slides.
    pos : (J, 3) out
        Keypoints (joint origins before their own DOFs).
    axes, pivots : (N, 3) out
        World axis (or slide direction) and pivot of every DOF.
    tmp : (2, 3, 3) scratch
    half : (2, N) out
        The half-angle cosines and sines of ``q``.
    """
    half_angles(q, half)
    fk_half(tb, q, half, root_pos, root_rot, need_axes, rot, org, pos, axes, pivots, tmp)


@nb.njit(**INLINE)
def fk_half(
    tb: Tables,
    q: np.ndarray,
    half: np.ndarray,
    root_pos: np.ndarray,
    root_rot: np.ndarray,
    need_axes: bool,
    rot: np.ndarray,
    org: np.ndarray,
    pos: np.ndarray,
    axes: np.ndarray,
    pivots: np.ndarray,
    tmp: np.ndarray,
) -> None:
    """:func:`fk` with the half-angle cosines and sines ``half`` ``(2, N)`` of ``q`` given.

    A hinge's cosine and sine are ``(c - s)(c + s)`` and ``2 s c`` of its half angle,
    so a solver that advances ``half`` along its steps (:func:`advance_half_angles`)
    calls no trigonometric function here.

    A coupled plan (``tb.coupled``) runs :func:`~pipeline.solve.compiled.driven.fk_steps`
    instead, whose ``axes`` and ``pivots`` hold each DOF's screw.

    Notes
    -----
    Frames are carried as 9-tuples (row-major) in registers; array views are avoided in
    the loop because each costs a reference-count update.
    """
    if tb.coupled:
        fk_steps(tb, q, half, root_pos, root_rot, need_axes, rot, org, pos, axes, pivots, tmp)
        return
    for j in range(tb.parent.shape[0]):
        p = tb.parent[j]
        if p < 0:
            a = (
                root_rot[0, 0], root_rot[0, 1], root_rot[0, 2],
                root_rot[1, 0], root_rot[1, 1], root_rot[1, 2],
                root_rot[2, 0], root_rot[2, 1], root_rot[2, 2],
            )  # fmt: skip
            b0, b1, b2 = root_pos[0], root_pos[1], root_pos[2]
        else:
            a = _load33(rot, p)
            b0, b1, b2 = org[p, 0], org[p, 1], org[p, 2]
        f0, f1, f2 = tb.offset_pos[j, 0], tb.offset_pos[j, 1], tb.offset_pos[j, 2]
        o0 = b0 + a[0] * f0 + a[1] * f1 + a[2] * f2
        o1 = b1 + a[3] * f0 + a[4] * f1 + a[5] * f2
        o2 = b2 + a[6] * f0 + a[7] * f1 + a[8] * f2
        pos[j, 0], pos[j, 1], pos[j, 2] = o0, o1, o2
        r = a if tb.offset_identity[j] else _mul33(a, _load33(tb.offset_rot, j))
        for k in range(tb.dof_start[j], tb.dof_start[j + 1]):
            typ = tb.dof_type[k]
            al = tb.aligned[k]
            if al >= 0:  # hinge on a coordinate axis
                sg = tb.axis_sign[k]
                if need_axes:
                    axes[k, 0], axes[k, 1], axes[k, 2] = sg * r[al], sg * r[3 + al], sg * r[6 + al]
                    pivots[k, 0], pivots[k, 1], pivots[k, 2] = o0, o1, o2
                ch, sh = half[0, k], half[1, k]
                r = _mix(r, al, (ch - sh) * (ch + sh), sg * 2.0 * sh * ch)
            elif typ in (HINGE, SLIDE):
                x, y, z = tb.dof_axis[k, 0], tb.dof_axis[k, 1], tb.dof_axis[k, 2]
                ux = r[0] * x + r[1] * y + r[2] * z
                uy = r[3] * x + r[4] * y + r[5] * z
                uz = r[6] * x + r[7] * y + r[8] * z
                if need_axes:
                    axes[k, 0], axes[k, 1], axes[k, 2] = ux, uy, uz
                    pivots[k, 0], pivots[k, 1], pivots[k, 2] = o0, o1, o2
                if typ == SLIDE:
                    o0 += ux * q[k]
                    o1 += uy * q[k]
                    o2 += uz * q[k]
                else:
                    ch, sh = half[0, k], half[1, k]
                    axis_angle(x, y, z, (ch - sh) * (ch + sh), 2.0 * sh * ch, tmp, 0)
                    r = _mul33(r, _load33(tmp, 0))
            elif typ == SWING1:
                s1, s2 = q[k], q[k + 1]
                v0 = s1 * tb.dof_axis[k, 0] + s2 * tb.dof_axis[k + 1, 0]
                v1 = s1 * tb.dof_axis[k, 1] + s2 * tb.dof_axis[k + 1, 1]
                v2 = s1 * tb.dof_axis[k, 2] + s2 * tb.dof_axis[k + 1, 2]
                expmap_and_left_jacobian(v0, v1, v2, tmp)
                if need_axes:
                    rj = _mul33(r, _load33(tmp, 1))
                    for kk in (k, k + 1):
                        x, y, z = tb.dof_axis[kk, 0], tb.dof_axis[kk, 1], tb.dof_axis[kk, 2]
                        axes[kk, 0] = rj[0] * x + rj[1] * y + rj[2] * z
                        axes[kk, 1] = rj[3] * x + rj[4] * y + rj[5] * z
                        axes[kk, 2] = rj[6] * x + rj[7] * y + rj[8] * z
                        pivots[kk, 0], pivots[kk, 1], pivots[kk, 2] = o0, o1, o2
                r = _mul33(r, _load33(tmp, 0))
            # SWING2 was applied together with its SWING1
        org[j, 0], org[j, 1], org[j, 2] = o0, o1, o2
        for i in range(9):
            rot[j, i // 3, i % 3] = r[i]


@nb.njit(**INLINE)
def objective(
    tb: Tables,
    pos: np.ndarray,
    obs: np.ndarray,
    w: np.ndarray,
    q: np.ndarray,
    neutral_weight: float,
    loss: int,
    scale: float,
    res: np.ndarray,
    weff: np.ndarray,
    task_weight: np.ndarray,
    task_target: np.ndarray,
) -> float:
    """Residuals, robust weights and objective of one fitted pose.

    Parameters
    ----------
    tb : Tables
    pos : (J, 3) fitted keypoints
    obs : (J, 3) targets (ignored where ``w`` is 0)
    w : (J,) observation weights times joint weight scalers
    q : (N,) DOF values
    neutral_weight : float
    loss : int
        A code of :data:`pipeline.solve.rules.LOSS_CODES`.
    scale : float
        Robust loss scale (length units).
    res : (J, 3) out
        ``obs - pos``, zero where missing.
    weff : (J,) out
        Effective (IRLS) weights, zero where missing.
    task_weight, task_target : (N,)
        Coordinate-task weights (0: none) and this frame's targets.

    Returns
    -------
    float
        ``sum_i w_i rho(|r_i|^2) + neutral_weight * sum_k scaler_k (q_k - neutral_k)^2
        + sum_k task_weight_k (q_k - task_target_k)^2``.
    """
    cost = 0.0
    s2 = scale * scale
    for j in range(pos.shape[0]):
        wj = w[j]
        r0 = obs[j, 0] - pos[j, 0]
        r1 = obs[j, 1] - pos[j, 1]
        r2 = obs[j, 2] - pos[j, 2]
        d2 = r0 * r0 + r1 * r1 + r2 * r2
        if not (wj > 0.0 and math.isfinite(r0) and math.isfinite(r1) and math.isfinite(r2)):
            res[j, 0] = res[j, 1] = res[j, 2] = 0.0
            weff[j] = 0.0
            continue
        res[j, 0], res[j, 1], res[j, 2] = r0, r1, r2
        if loss == HUBER:
            e = math.sqrt(d2)
            if e <= scale:
                weff[j] = wj
                cost += wj * d2
            else:
                weff[j] = wj * scale / e
                cost += wj * (2.0 * scale * e - s2)
        elif loss == CAUCHY:
            weff[j] = wj / (1.0 + d2 / s2)
            cost += wj * s2 * math.log1p(d2 / s2)
        else:
            weff[j] = wj
            cost += wj * d2
    prior = 0.0
    tasks = 0.0
    for k in range(q.shape[0]):
        dq = q[k] - tb.neutral[k]
        prior += tb.prior_scale[k] * dq * dq
        dt = q[k] - task_target[k]
        tasks += task_weight[k] * dt * dt
    return cost + neutral_weight * prior + tasks
