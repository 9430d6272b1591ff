"""Compiled forward kinematics of a coupled plan: its steps, their functions and screws.

Same semantics as :func:`pipeline.kinematics.fk_jacobian.fk_state` on a coupled model:
every joint applies its steps (DOFs and driven axes) in order, a driven step at the value
of its function chain (:mod:`pipeline.solve.compiled.coupled_tables`), evaluated as
:func:`pipeline.bodyplan.functions.evaluate` does (OpenSim's ``SimmSpline`` and its
bisection for the knot interval). With ``need_axes`` every step adds its screw times its
chain derivative (the chain rule) to the screw of its group
(:mod:`pipeline.kinematics.step_groups`): ``axes[i]`` the rotation part (world axes of the
hinges), ``pivots[i]`` the moment part in world coordinates (``o x u`` of a hinge about
``u`` through ``o``, the direction ``u`` of a slide), so a keypoint ``p`` below the group's
joint moves by ``axes[i] x p + pivots[i]`` per unit of the DOF.

:func:`fk_steps` and :func:`local_quats_steps` are plain compiled functions, not inlined
into the kernels as the small helpers are (inlined at every call site of the forward pass
they made the kernels' compile take far longer and far more memory); the function
evaluation is inlined into them (a call that takes the tables costs microseconds).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from pipeline.kinematics.plan_arrays import HINGE, SLIDE, SWING1
from pipeline.solve.compiled.compilers import NOREFCOUNT_JIT
from pipeline.solve.compiled.coupled_tables import (
    CONSTANT,
    FN_COUNT,
    FN_KIND,
    FN_START,
    KNOT_B,
    KNOT_C,
    KNOT_D,
    KNOT_X,
    KNOT_Y,
    LINEAR,
    POLYNOMIAL,
    STEP_ALIGNED,
    STEP_CHAIN,
    STEP_CHAIN_END,
    STEP_OWN,
    STEP_ROOT,
    STEP_SCREW,
    STEP_TYPE,
)
from pipeline.solve.compiled.so3 import expmap_and_left_jacobian
from pipeline.solve.compiled.tables import Tables
from pipeline.solve.rules import INLINE

__all__ = ["evaluate_function", "fk_steps", "local_quats_steps", "screw", "step_value"]

# OpenSim's SimmMacros (as pipeline.bodyplan.functions)
_ROUNDOFF = 2e-13


@nb.njit(**INLINE)
def _interval(kn: np.ndarray, a: int, n: int, v: float) -> int:
    """OpenSim's bisection: ``k`` with ``x[a + k] <= v <= x[a + k + 1]`` (``v`` inside)."""
    lo, hi = 0, n
    k = (lo + hi) // 2
    for _ in range(2 * n + 2):
        k = (lo + hi) // 2
        if v < kn[a + k, KNOT_X]:
            hi = k
        elif v > kn[a + min(k + 1, n - 1), KNOT_X]:
            lo = k
        else:
            break
    return min(k, n - 2)


@nb.njit(**INLINE)
def evaluate_function(
    fn_int: np.ndarray, fn_scale: np.ndarray, kn: np.ndarray, f: int, v: float
) -> tuple:
    """Value and derivative of function ``f`` at ``v``.

    ``fn_int``, ``fn_scale``, ``kn`` are ``Tables.fn_int``, ``Tables.fn_scale`` and
    ``Tables.fn_knots`` (:mod:`pipeline.solve.compiled.coupled_tables`).
    """
    kind, a, n = fn_int[f, FN_KIND], fn_int[f, FN_START], fn_int[f, FN_COUNT]
    if kind == LINEAR:
        value, slope = kn[a, KNOT_Y] * v + kn[a + 1, KNOT_Y], kn[a, KNOT_Y]
    elif kind == CONSTANT:
        value, slope = kn[a, KNOT_Y], 0.0
    elif kind == POLYNOMIAL:
        value = slope = 0.0
        for i in range(n):  # Horner's rule for the value and its derivative
            slope = slope * v + value
            value = value * v + kn[a + i, KNOT_Y]
    else:
        e = a + n - 1
        x0, xn = kn[a, KNOT_X], kn[e, KNOT_X]
        if v < x0:
            value, slope = kn[a, KNOT_Y] + (v - x0) * kn[a, KNOT_B], kn[a, KNOT_B]
        elif v > xn:
            value, slope = kn[e, KNOT_Y] + (v - xn) * kn[e, KNOT_B], kn[e, KNOT_B]
        elif abs(v - x0) <= _ROUNDOFF:
            value, slope = kn[a, KNOT_Y], kn[a, KNOT_B]
        elif abs(v - xn) <= _ROUNDOFF:
            value, slope = kn[e, KNOT_Y], kn[e, KNOT_B]
        else:
            i = a + (0 if n < 3 else _interval(kn, a, n, v))
            dx = v - kn[i, KNOT_X]
            bi, ci, di = kn[i, KNOT_B], kn[i, KNOT_C], kn[i, KNOT_D]
            value = kn[i, KNOT_Y] + dx * (bi + dx * (ci + dx * di))
            slope = bi + dx * (2.0 * ci + 3.0 * dx * di)
    sc = fn_scale[f]
    return sc * value, sc * slope


@nb.njit(**INLINE)
def step_value(
    st: np.ndarray,
    chain_fn: np.ndarray,
    fn_int: np.ndarray,
    fn_scale: np.ndarray,
    kn: np.ndarray,
    s: int,
    q: np.ndarray,
) -> tuple:
    """Value of step ``s`` and its derivative along its root DOF.

    ``st`` is ``Tables.step_int``; the others are the ``Tables`` fields of their names
    (``kn``: ``fn_knots``). Arrays, not the tables: an inlined helper that takes the
    tables costs a reference-count update of each of their arrays at every call.
    """
    x = q[st[s, STEP_ROOT]]
    d = 1.0
    for i in range(st[s, STEP_CHAIN], st[s, STEP_CHAIN_END]):
        x, slope = evaluate_function(fn_int, fn_scale, kn, chain_fn[i], x)
        d = slope * d
    return x, d


@nb.njit(**INLINE)
def _rotation(ux: float, uy: float, uz: float, c: float, s: float) -> tuple:
    """Row-major 9-tuple of the rotation with cosine ``c``, sine ``s`` about unit ``u``.

    The products of :func:`~pipeline.solve.compiled.so3.axis_angle`, in registers.
    """
    t = 1.0 - c
    return (
        c + t * ux * ux, t * ux * uy - s * uz, t * ux * uz + s * uy,
        t * ux * uy + s * uz, c + t * uy * uy, t * uy * uz - s * ux,
        t * ux * uz - s * uy, t * uy * uz + s * ux, c + t * uz * uz,
    )  # fmt: skip


@nb.njit(**INLINE)
def _mul33(a: tuple, b: tuple) -> tuple:
    """``a @ b`` of two row-major 9-tuples (as ``r @ m[i]`` of :func:`_mul`)."""
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
def _add_hinge(axes, pivots, i: int, c: float, ux, uy, uz, ox, oy, oz) -> None:
    axes[i, 0] += c * ux
    axes[i, 1] += c * uy
    axes[i, 2] += c * uz
    pivots[i, 0] += c * (oy * uz - oz * uy)
    pivots[i, 1] += c * (oz * ux - ox * uz)
    pivots[i, 2] += c * (ox * uy - oy * ux)


@nb.njit(**INLINE)
def _mul(r: tuple, m: np.ndarray, i: int) -> tuple:
    """``r @ m[i]`` of a row-major 9-tuple and a (., 3, 3) array."""
    return (
        r[0] * m[i, 0, 0] + r[1] * m[i, 1, 0] + r[2] * m[i, 2, 0],
        r[0] * m[i, 0, 1] + r[1] * m[i, 1, 1] + r[2] * m[i, 2, 1],
        r[0] * m[i, 0, 2] + r[1] * m[i, 1, 2] + r[2] * m[i, 2, 2],
        r[3] * m[i, 0, 0] + r[4] * m[i, 1, 0] + r[5] * m[i, 2, 0],
        r[3] * m[i, 0, 1] + r[4] * m[i, 1, 1] + r[5] * m[i, 2, 1],
        r[3] * m[i, 0, 2] + r[4] * m[i, 1, 2] + r[5] * m[i, 2, 2],
        r[6] * m[i, 0, 0] + r[7] * m[i, 1, 0] + r[8] * m[i, 2, 0],
        r[6] * m[i, 0, 1] + r[7] * m[i, 1, 1] + r[8] * m[i, 2, 1],
        r[6] * m[i, 0, 2] + r[7] * m[i, 1, 2] + r[8] * m[i, 2, 2],
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


@nb.njit(**INLINE)
def _cos_sin(own: int, v: float, half: np.ndarray) -> tuple:
    """Cosine and sine of a step's angle ``v`` (a DOF's from its half angles)."""
    if own >= 0:
        ch, sh = half[0, own], half[1, own]
        return (ch - sh) * (ch + sh), 2.0 * sh * ch
    return math.cos(v), math.sin(v)


@nb.njit(**NOREFCOUNT_JIT)
def fk_steps(tb, q, half, root_pos, root_rot, need_axes, rot, org, pos, axes, pivots, tmp):
    """:func:`~pipeline.solve.compiled.forward.fk_half` of a coupled plan (module docstring).

    ``axes`` and ``pivots`` are ``(N + G, 3)``: the screws of the DOFs and of the extra
    groups (``Tables.extra_joint``).
    """
    parent, offset_pos, offset_rot = tb.parent, tb.offset_pos, tb.offset_rot
    offset_identity = tb.offset_identity
    step_start, st, sr, dof_axis = tb.step_start, tb.step_int, tb.step_real, tb.dof_axis
    chain_fn, fn_int, fn_scale, kn = tb.chain_fn, tb.fn_int, tb.fn_scale, tb.fn_knots
    if need_axes:
        for i in range(axes.shape[0]):
            for c in range(3):
                axes[i, c] = 0.0
                pivots[i, c] = 0.0
    for j in range(parent.shape[0]):
        p = parent[j]
        if p < 0:
            a = (
                root_rot[0, 0], root_rot[0, 1], root_rot[0, 2],
                root_rot[1, 0], root_rot[1, 1], root_rot[1, 2],
                root_rot[2, 0], root_rot[2, 1], root_rot[2, 2],
            )  # fmt: skip
            b0, b1, b2 = root_pos[0], root_pos[1], root_pos[2]
        else:
            a = (
                rot[p, 0, 0], rot[p, 0, 1], rot[p, 0, 2],
                rot[p, 1, 0], rot[p, 1, 1], rot[p, 1, 2],
                rot[p, 2, 0], rot[p, 2, 1], rot[p, 2, 2],
            )  # fmt: skip
            b0, b1, b2 = org[p, 0], org[p, 1], org[p, 2]
        f0, f1, f2 = offset_pos[j, 0], offset_pos[j, 1], offset_pos[j, 2]
        o0 = b0 + a[0] * f0 + a[1] * f1 + a[2] * f2
        o1 = b1 + a[3] * f0 + a[4] * f1 + a[5] * f2
        o2 = b2 + a[6] * f0 + a[7] * f1 + a[8] * f2
        pos[j, 0], pos[j, 1], pos[j, 2] = o0, o1, o2
        r = a if offset_identity[j] else _mul(a, offset_rot, j)
        for s in range(step_start[j], step_start[j + 1]):
            typ, own = st[s, STEP_TYPE], st[s, STEP_OWN]
            if own >= 0:
                v, dv = q[own], 1.0
            else:
                v, dv = step_value(st, chain_fn, fn_int, fn_scale, kn, s, q)
            gi = st[s, STEP_SCREW]
            acc = need_axes and gi >= 0
            al = st[s, STEP_ALIGNED]
            if al >= 0:
                sg = sr[s, 3]
                if acc:
                    _add_hinge(axes, pivots, gi, dv, sg * r[al], sg * r[3 + al], sg * r[6 + al],
                               o0, o1, o2)  # fmt: skip
                cs, sn = _cos_sin(own, v, half)
                r = _mix(r, al, cs, sg * sn)
            elif typ in (HINGE, SLIDE):
                x, y, z = sr[s, 0], sr[s, 1], sr[s, 2]
                ux = r[0] * x + r[1] * y + r[2] * z
                uy = r[3] * x + r[4] * y + r[5] * z
                uz = r[6] * x + r[7] * y + r[8] * z
                if typ == SLIDE:
                    if acc:
                        pivots[gi, 0] += dv * ux
                        pivots[gi, 1] += dv * uy
                        pivots[gi, 2] += dv * uz
                    o0 += ux * v
                    o1 += uy * v
                    o2 += uz * v
                else:
                    if acc:
                        _add_hinge(axes, pivots, gi, dv, ux, uy, uz, o0, o1, o2)
                    cs, sn = _cos_sin(own, v, half)
                    r = _mul33(r, _rotation(x, y, z, cs, sn))
            elif typ == SWING1:  # a ball's swing pair: DOFs own, own + 1 (own steps only)
                k = own
                s1, s2 = q[k], q[k + 1]
                v0 = s1 * dof_axis[k, 0] + s2 * dof_axis[k + 1, 0]
                v1 = s1 * dof_axis[k, 1] + s2 * dof_axis[k + 1, 1]
                v2 = s1 * dof_axis[k, 2] + s2 * dof_axis[k + 1, 2]
                expmap_and_left_jacobian(v0, v1, v2, tmp)
                if need_axes:
                    rj = _mul(r, tmp, 1)
                    for kk in (k, k + 1):
                        x, y, z = dof_axis[kk, 0], dof_axis[kk, 1], dof_axis[kk, 2]
                        _add_hinge(axes, pivots, kk, 1.0, rj[0] * x + rj[1] * y + rj[2] * z,
                                   rj[3] * x + rj[4] * y + rj[5] * z,
                                   rj[6] * x + rj[7] * y + rj[8] * z, o0, o1, o2)  # fmt: skip
                r = _mul(r, tmp, 0)
        org[j, 0], org[j, 1], org[j, 2] = o0, o1, o2
        for i in range(9):
            rot[j, i // 3, i % 3] = r[i]


@nb.njit(**INLINE)
def screw(axes: np.ndarray, pivots: np.ndarray, i: int, root_pos: np.ndarray) -> tuple:
    """Screw ``i`` of :func:`fk_steps` about ``root_pos``: ``(a, m - root_pos x a)``."""
    ax, ay, az = axes[i, 0], axes[i, 1], axes[i, 2]
    rx, ry, rz = root_pos[0], root_pos[1], root_pos[2]
    return (
        ax, ay, az,
        pivots[i, 0] - (ry * az - rz * ay),
        pivots[i, 1] - (rz * ax - rx * az),
        pivots[i, 2] - (rx * ay - ry * ax),
    )  # fmt: skip


@nb.njit(**NOREFCOUNT_JIT)
def local_quats_steps(tb: Tables, q: np.ndarray, out: np.ndarray, half: np.ndarray) -> None:
    """:func:`~pipeline.solve.compiled.pose.local_quats` of a coupled plan (driven hinges too)."""
    step_start, st, sr, dof_axis = tb.step_start, tb.step_int, tb.step_real, tb.dof_axis
    chain_fn, fn_int, fn_scale, kn = tb.chain_fn, tb.fn_int, tb.fn_scale, tb.fn_knots
    for j in range(out.shape[0]):
        w, x, y, z = 1.0, 0.0, 0.0, 0.0
        for s in range(step_start[j], step_start[j + 1]):
            typ, k = st[s, STEP_TYPE], st[s, STEP_OWN]
            if typ == HINGE:
                if k >= 0:
                    bw, sn = half[0, k], half[1, k]
                else:
                    v, _ = step_value(st, chain_fn, fn_int, fn_scale, kn, s, q)
                    bw, sn = math.cos(0.5 * v), math.sin(0.5 * v)
                bx, by, bz = sn * sr[s, 0], sn * sr[s, 1], sn * sr[s, 2]
            elif typ == SWING1:
                s1, s2 = q[k], q[k + 1]
                vx = s1 * dof_axis[k, 0] + s2 * dof_axis[k + 1, 0]
                vy = s1 * dof_axis[k, 1] + s2 * dof_axis[k + 1, 1]
                vz = s1 * dof_axis[k, 2] + s2 * dof_axis[k + 1, 2]
                t = math.sqrt(vx * vx + vy * vy + vz * vz)
                f = 0.5 - t * t / 48.0 if t < 1e-8 else math.sin(0.5 * t) / t
                bw, bx, by, bz = math.cos(0.5 * t), f * vx, f * vy, f * vz
            else:
                continue
            w, x, y, z = (
                w * bw - x * bx - y * by - z * bz,
                w * bx + x * bw + y * bz - z * by,
                w * by - x * bz + y * bw + z * bx,
                w * bz + x * by - y * bx + z * bw,
            )
        nrm = math.sqrt(w * w + x * x + y * y + z * z)
        if w < 0.0:
            nrm = -nrm
        out[j, 0], out[j, 1], out[j, 2] = w / nrm, x / nrm, y / nrm
        out[j, 3] = z / nrm
