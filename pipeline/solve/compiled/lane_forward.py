"""Forward kinematics and the objective of :mod:`.frames` on :data:`LANES` frames side by side.

Each function here, and in :mod:`.lane_normal` and :mod:`.lane_step`, is its scalar
namesake (:mod:`.forward`, :mod:`.normal`, :mod:`.loop`, :mod:`.pose`) with a trailing
lane axis on every per-frame array: the plan's tables, and so every index and every
branch on a DOF's type, are shared by the lanes, and only the numbers differ. The
innermost loops run over the lanes, which the compiler turns into SIMD instructions.
Every lane computes exactly the scalar expressions in the scalar order, so a lane's
numbers are the scalar kernel's bit for bit (the tests hold them to it); what is not
worth vectorizing (ball joints, general hinge axes, the library sine and cosine of a
large step) runs lane by lane through the same formulas.

Only plans without driven axes (``Tables.coupled`` False) are solved in lanes.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from pipeline.kinematics.plan_arrays import HINGE, SLIDE, SWING1
from pipeline.solve.compiled.compilers import NOALIAS_JIT
from pipeline.solve.compiled.so3 import axis_angle, expmap_and_left_jacobian
from pipeline.solve.compiled.tables import Tables
from pipeline.solve.rules import CAUCHY, HUBER, INLINE

#: Frames solved side by side: sixteen float64 lanes are four AVX2 (two AVX-512) registers;
#: the loops over them run a run-time trip count, which LLVM's loop vectorizer takes (a
#: constant count this short is unrolled to scalar code instead).
LANES = 16

__all__ = ["LANES", "fk_lanes", "objective_lanes"]


@nb.njit(**INLINE)
def _times(r: np.ndarray, ln: int, b: np.ndarray) -> None:
    """Lane ``ln``'s frame ``r`` ``(9, L)`` (row-major) times ``b`` ``(3, 3)``, in place."""
    a0, a1, a2 = r[0, ln], r[1, ln], r[2, ln]
    a3, a4, a5 = r[3, ln], r[4, ln], r[5, ln]
    a6, a7, a8 = r[6, ln], r[7, ln], r[8, ln]
    r[0, ln] = a0 * b[0, 0] + a1 * b[1, 0] + a2 * b[2, 0]
    r[1, ln] = a0 * b[0, 1] + a1 * b[1, 1] + a2 * b[2, 1]
    r[2, ln] = a0 * b[0, 2] + a1 * b[1, 2] + a2 * b[2, 2]
    r[3, ln] = a3 * b[0, 0] + a4 * b[1, 0] + a5 * b[2, 0]
    r[4, ln] = a3 * b[0, 1] + a4 * b[1, 1] + a5 * b[2, 1]
    r[5, ln] = a3 * b[0, 2] + a4 * b[1, 2] + a5 * b[2, 2]
    r[6, ln] = a6 * b[0, 0] + a7 * b[1, 0] + a8 * b[2, 0]
    r[7, ln] = a6 * b[0, 1] + a7 * b[1, 1] + a8 * b[2, 1]
    r[8, ln] = a6 * b[0, 2] + a7 * b[1, 2] + a8 * b[2, 2]


@nb.njit(**INLINE)
def _general_dof(tb: Tables, k: int, q, half, r, need_axes, axes, pivots, o, tmp, ln):
    """A non-aligned hinge, a slide or a ball's swing pair of lane ``ln`` (scalar code)."""
    typ = tb.dof_type[k]
    r0, r1, r2 = r[0, ln], r[1, ln], r[2, ln]
    r3, r4, r5 = r[3, ln], r[4, ln], r[5, ln]
    r6, r7, r8 = r[6, ln], r[7, ln], r[8, ln]
    o0, o1, o2 = o[0, ln], o[1, ln], o[2, ln]
    if typ in (HINGE, SLIDE):
        x, y, z = tb.dof_axis[k, 0], tb.dof_axis[k, 1], tb.dof_axis[k, 2]
        ux = r0 * x + r1 * y + r2 * z
        uy = r3 * x + r4 * y + r5 * z
        uz = r6 * x + r7 * y + r8 * z
        if need_axes:
            axes[k, 0, ln], axes[k, 1, ln], axes[k, 2, ln] = ux, uy, uz
            pivots[k, 0, ln], pivots[k, 1, ln], pivots[k, 2, ln] = o0, o1, o2
        if typ == SLIDE:
            o[0, ln] = o0 + ux * q[k, ln]
            o[1, ln] = o1 + uy * q[k, ln]
            o[2, ln] = o2 + uz * q[k, ln]
            return
        ch, sh = half[0, k, ln], half[1, k, ln]
        axis_angle(x, y, z, (ch - sh) * (ch + sh), 2.0 * sh * ch, tmp, 0)
    else:  # SWING1 (with its SWING2)
        s1, s2 = q[k, ln], q[k + 1, ln]
        v0 = s1 * tb.dof_axis[k, 0] + s2 * tb.dof_axis[k + 1, 0]
        v1 = s1 * tb.dof_axis[k, 1] + s2 * tb.dof_axis[k + 1, 1]
        v2 = s1 * tb.dof_axis[k, 2] + s2 * tb.dof_axis[k + 1, 2]
        expmap_and_left_jacobian(v0, v1, v2, tmp)
        if need_axes:
            b = tmp[1]
            j0 = r0 * b[0, 0] + r1 * b[1, 0] + r2 * b[2, 0]
            j1 = r0 * b[0, 1] + r1 * b[1, 1] + r2 * b[2, 1]
            j2 = r0 * b[0, 2] + r1 * b[1, 2] + r2 * b[2, 2]
            j3 = r3 * b[0, 0] + r4 * b[1, 0] + r5 * b[2, 0]
            j4 = r3 * b[0, 1] + r4 * b[1, 1] + r5 * b[2, 1]
            j5 = r3 * b[0, 2] + r4 * b[1, 2] + r5 * b[2, 2]
            j6 = r6 * b[0, 0] + r7 * b[1, 0] + r8 * b[2, 0]
            j7 = r6 * b[0, 1] + r7 * b[1, 1] + r8 * b[2, 1]
            j8 = r6 * b[0, 2] + r7 * b[1, 2] + r8 * b[2, 2]
            for kk in (k, k + 1):
                x, y, z = tb.dof_axis[kk, 0], tb.dof_axis[kk, 1], tb.dof_axis[kk, 2]
                axes[kk, 0, ln] = j0 * x + j1 * y + j2 * z
                axes[kk, 1, ln] = j3 * x + j4 * y + j5 * z
                axes[kk, 2, ln] = j6 * x + j7 * y + j8 * z
                pivots[kk, 0, ln], pivots[kk, 1, ln], pivots[kk, 2, ln] = o0, o1, o2
    _times(r, ln, tmp[0])


@nb.njit(**NOALIAS_JIT)
def fk_lanes(
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
    r: np.ndarray,
    o: np.ndarray,
    tmp: np.ndarray,
) -> None:
    """:func:`.forward.fk_half` of every lane.

    Parameters
    ----------
    tb : Tables
        Of a plan without driven axes.
    q : (N, L); half : (2, N, L); root_pos : (3, L); root_rot : (9, L) row-major
    need_axes : bool
    rot : (J, 9, L) out; org, pos : (J, 3, L) out; axes, pivots : (N, 3, L) out
        As :func:`~.forward.fk_half`'s, lane last.
    r : (9, L), o : (3, L), tmp : (3, 3, 3)
        Scratch: the running frame and origin of a joint, and the scalar helpers' matrices.
    """
    nl = q.shape[1]
    parent, offset_pos, offset_rot, offset_identity, dof_start, aligned, axis_sign, dof_type = (
        tb.parent,
        tb.offset_pos,
        tb.offset_rot,
        tb.offset_identity,
        tb.dof_start,
        tb.aligned,
        tb.axis_sign,
        tb.dof_type,
    )
    for j in range(parent.shape[0]):
        p = parent[j]
        f0, f1, f2 = offset_pos[j, 0], offset_pos[j, 1], offset_pos[j, 2]
        for i in range(9):
            for ln in range(nl):
                r[i, ln] = root_rot[i, ln] if p < 0 else rot[p, i, ln]
        for ln in range(nl):
            b0 = root_pos[0, ln] if p < 0 else org[p, 0, ln]
            b1 = root_pos[1, ln] if p < 0 else org[p, 1, ln]
            b2 = root_pos[2, ln] if p < 0 else org[p, 2, ln]
            o0 = b0 + r[0, ln] * f0 + r[1, ln] * f1 + r[2, ln] * f2
            o1 = b1 + r[3, ln] * f0 + r[4, ln] * f1 + r[5, ln] * f2
            o2 = b2 + r[6, ln] * f0 + r[7, ln] * f1 + r[8, ln] * f2
            pos[j, 0, ln], pos[j, 1, ln], pos[j, 2, ln] = o0, o1, o2
            o[0, ln], o[1, ln], o[2, ln] = o0, o1, o2
        if not offset_identity[j]:
            b = offset_rot[j]
            for ln in range(nl):
                _times(r, ln, b)
        for k in range(dof_start[j], dof_start[j + 1]):
            al = aligned[k]
            if al >= 0:  # hinge on a coordinate axis: two columns mix
                sg = axis_sign[k]
                i1, i2 = (al + 1) % 3, (al + 2) % 3
                if need_axes:
                    for ln in range(nl):
                        axes[k, 0, ln] = sg * r[al, ln]
                        axes[k, 1, ln] = sg * r[3 + al, ln]
                        axes[k, 2, ln] = sg * r[6 + al, ln]
                        pivots[k, 0, ln], pivots[k, 1, ln], pivots[k, 2, ln] = (
                            o[0, ln],
                            o[1, ln],
                            o[2, ln],
                        )
                for ln in range(nl):
                    ch, sh = half[0, k, ln], half[1, k, ln]
                    c, s = (ch - sh) * (ch + sh), sg * 2.0 * sh * ch
                    for row in range(3):
                        x1, x2 = r[3 * row + i1, ln], r[3 * row + i2, ln]
                        r[3 * row + i1, ln] = c * x1 + s * x2
                        r[3 * row + i2, ln] = c * x2 - s * x1
            elif dof_type[k] in (HINGE, SLIDE, SWING1):
                for ln in range(nl):
                    _general_dof(tb, k, q, half, r, need_axes, axes, pivots, o, tmp, ln)
        for i in range(3):
            for ln in range(nl):
                org[j, i, ln] = o[i, ln]
        for i in range(9):
            for ln in range(nl):
                rot[j, i, ln] = r[i, ln]


@nb.njit(**NOALIAS_JIT)
def objective_lanes(
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
    cost: np.ndarray,
    sums: np.ndarray,
) -> None:
    """:func:`.forward.objective` of every lane into ``cost`` ``(L,)``.

    ``sums`` ``(2, L)`` is scratch (the prior's and the tasks' sums).

    ``pos``, ``obs``, ``res`` are ``(J, 3, L)``, ``w``, ``weff`` ``(J, L)``, ``q`` and
    ``task_target`` ``(N, L)``; ``task_weight`` ``(N,)`` is the plan's.
    """
    nl = pos.shape[2]
    s2 = scale * scale
    for ln in range(nl):
        cost[ln] = 0.0
    for j in range(pos.shape[0]):
        for ln in range(nl):
            wj = w[j, ln]
            r0 = obs[j, 0, ln] - pos[j, 0, ln]
            r1 = obs[j, 1, ln] - pos[j, 1, ln]
            r2 = obs[j, 2, ln] - pos[j, 2, ln]
            d2 = r0 * r0 + r1 * r1 + r2 * r2
            seen = wj > 0.0 and math.isfinite(r0) and math.isfinite(r1) and math.isfinite(r2)
            if not seen:
                r0 = r1 = r2 = 0.0
                wj = 0.0
                d2 = 0.0
            res[j, 0, ln], res[j, 1, ln], res[j, 2, ln] = r0, r1, r2
            if loss == HUBER:
                e = math.sqrt(d2)
                if e <= scale:
                    weff[j, ln] = wj
                    cost[ln] += wj * d2
                else:
                    weff[j, ln] = wj * scale / e
                    cost[ln] += wj * (2.0 * scale * e - s2)
            elif loss == CAUCHY:
                weff[j, ln] = wj / (1.0 + d2 / s2)
                if seen:
                    cost[ln] += wj * s2 * math.log1p(d2 / s2)
            else:
                weff[j, ln] = wj
                if seen:
                    cost[ln] += wj * d2
    neutral, prior_scale = tb.neutral, tb.prior_scale
    for ln in range(nl):
        sums[0, ln] = 0.0
        sums[1, ln] = 0.0
    for k in range(q.shape[0]):
        nk, pk, wk = neutral[k], prior_scale[k], task_weight[k]
        for ln in range(nl):
            dq = q[k, ln] - nk
            sums[0, ln] += pk * dq * dq
            dt = q[k, ln] - task_target[k, ln]
            sums[1, ln] += wk * dt * dt
    for ln in range(nl):
        cost[ln] = cost[ln] + neutral_weight * sums[0, ln] + sums[1, ln]
