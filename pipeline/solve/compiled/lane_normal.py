"""The normal equations and the tree solve of :mod:`.frames` on :data:`~.lane_forward.LANES` frames.

The lane forms of :mod:`.normal` and of :mod:`.loop`'s damping and held-DOF step, as
:mod:`.lane_forward` describes: the same expressions in the same order per lane.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from pipeline.solve.compiled.compilers import NOALIAS_JIT
from pipeline.solve.compiled.loop import HELD_STIFFNESS
from pipeline.solve.compiled.tables import Tables
from pipeline.solve.limits import at_limit, held
from pipeline.solve.rules import INLINE

__all__ = ["assemble_lanes", "damp_lanes", "solve_tree_lanes"]


@nb.njit(**NOALIAS_JIT)
def assemble_lanes(
    tb: Tables,
    pos: np.ndarray,
    axes: np.ndarray,
    pivots: np.ndarray,
    root_pos: np.ndarray,
    res: np.ndarray,
    weff: np.ndarray,
    own: np.ndarray,
    mom: np.ndarray,
    xi: np.ndarray,
    f: np.ndarray,
    hd: np.ndarray,
    hc: np.ndarray,
    hr: np.ndarray,
    g: np.ndarray,
) -> None:
    """:func:`.normal.assemble` of every lane (every array of it with a lane axis last).

    ``own`` ``(J, 16, L)`` (each keypoint's own moments) and ``f`` ``(n_state, 6, L)``
    (each coordinate's ``Phi @ xi``) are scratch. The work is split into loops that
    each touch few arrays, which the compiler vectorizes over the lanes.
    """
    nj = pos.shape[0]
    nr = tb.n_root
    nl = pos.shape[2]
    parent, angular, dof_joint = tb.parent, tb.angular, tb.dof_joint
    anc, ld = tb.ancestors, tb.local_depth
    for j in range(nj):
        for ln in range(nl):
            w = weff[j, ln]
            px = pos[j, 0, ln] - root_pos[0, ln]
            py = pos[j, 1, ln] - root_pos[1, ln]
            pz = pos[j, 2, ln] - root_pos[2, ln]
            rx, ry, rz = w * res[j, 0, ln], w * res[j, 1, ln], w * res[j, 2, ln]
            wx, wy, wz = w * px, w * py, w * pz
            own[j, 0, ln] = w
            own[j, 1, ln] = wx
            own[j, 2, ln] = wy
            own[j, 3, ln] = wz
            own[j, 4, ln] = wx * px
            own[j, 5, ln] = wy * py
            own[j, 6, ln] = wz * pz
            own[j, 7, ln] = wx * py
            own[j, 8, ln] = wx * pz
            own[j, 9, ln] = wy * pz
            own[j, 10, ln] = py * rz - pz * ry
            own[j, 11, ln] = pz * rx - px * rz
            own[j, 12, ln] = px * ry - py * rx
            own[j, 13, ln] = rx
            own[j, 14, ln] = ry
            own[j, 15, ln] = rz
    for j in range(nj + 1):
        for c in range(16):
            for ln in range(nl):
                mom[j, c, ln] = 0.0
    for j in range(nj - 1, -1, -1):  # children follow parents: one reverse pass
        p = parent[j]
        if p < 0:
            p = nj
        for c in range(16):
            for ln in range(nl):
                mom[p, c, ln] += own[j, c, ln] + mom[j, c, ln]
    for s in range(nr):  # the root's unit screws select components of Phi xi
        for ln in range(nl):
            _phi_times_unit(mom, nj, s, f, s, ln)
            g[s, ln] = mom[nj, 13 + s, ln] if s < 3 else mom[nj, 10 + s - 3, ln]
            hd[s, ln] = f[s, (s + 3) % 6, ln]
        for c in range(s):
            for ln in range(nl):
                hr[s, c, ln] = f[s, (c + 3) % 6, ln]
    nd = dof_joint.shape[0]
    for k in range(nd):  # every DOF's screw
        s = nr + k
        if angular[k]:
            for ln in range(nl):
                ux, uy, uz = axes[k, 0, ln], axes[k, 1, ln], axes[k, 2, ln]
                ox = pivots[k, 0, ln] - root_pos[0, ln]
                oy = pivots[k, 1, ln] - root_pos[1, ln]
                oz = pivots[k, 2, ln] - root_pos[2, ln]
                xi[s, 0, ln], xi[s, 1, ln], xi[s, 2, ln] = ux, uy, uz
                xi[s, 3, ln] = oy * uz - oz * uy
                xi[s, 4, ln] = oz * ux - ox * uz
                xi[s, 5, ln] = ox * uy - oy * ux
        else:
            for ln in range(nl):
                xi[s, 0, ln] = xi[s, 1, ln] = xi[s, 2, ln] = 0.0
                xi[s, 3, ln], xi[s, 4, ln], xi[s, 5, ln] = (
                    axes[k, 0, ln],
                    axes[k, 1, ln],
                    axes[k, 2, ln],
                )
    for k in range(nd):  # Phi xi, the gradient and the diagonal
        s = nr + k
        jk = dof_joint[k]
        for ln in range(nl):
            ax, ay, az = xi[s, 0, ln], xi[s, 1, ln], xi[s, 2, ln]
            mx, my, mz = xi[s, 3, ln], xi[s, 4, ln], xi[s, 5, ln]
            m0, m1x, m1y, m1z = mom[jk, 0, ln], mom[jk, 1, ln], mom[jk, 2, ln], mom[jk, 3, ln]
            xx, yy, zz = mom[jk, 4, ln], mom[jk, 5, ln], mom[jk, 6, ln]
            xy, xz, yz = mom[jk, 7, ln], mom[jk, 8, ln], mom[jk, 9, ln]
            tr = xx + yy + zz
            f0 = tr * ax - (xx * ax + xy * ay + xz * az) + (m1y * mz - m1z * my)
            f1 = tr * ay - (xy * ax + yy * ay + yz * az) + (m1z * mx - m1x * mz)
            f2 = tr * az - (xz * ax + yz * ay + zz * az) + (m1x * my - m1y * mx)
            f3 = m0 * mx - (m1y * az - m1z * ay)
            f4 = m0 * my - (m1z * ax - m1x * az)
            f5 = m0 * mz - (m1x * ay - m1y * ax)
            f[s, 0, ln], f[s, 1, ln], f[s, 2, ln] = f0, f1, f2
            f[s, 3, ln], f[s, 4, ln], f[s, 5, ln] = f3, f4, f5
            g[s, ln] = (ax * mom[jk, 10, ln] + ay * mom[jk, 11, ln] + az * mom[jk, 12, ln]) + (
                mx * mom[jk, 13, ln] + my * mom[jk, 14, ln] + mz * mom[jk, 15, ln]
            )
            hd[s, ln] = (ax * f0 + ay * f1 + az * f2) + (mx * f3 + my * f4 + mz * f5)
    if nr:  # the root's screws are unit vectors: their products select components
        for k in range(nd):
            s = nr + k
            for c in range(6):
                for ln in range(nl):
                    hr[s, c, ln] = f[s, (c + 3) % 6, ln]
    for k in range(nd):  # entries with the DOF ancestors
        s = nr + k
        for m in range(ld[s]):
            i = anc[s, m]
            for ln in range(nl):
                hc[s, m, ln] = (
                    xi[i, 0, ln] * f[s, 0, ln]
                    + xi[i, 1, ln] * f[s, 1, ln]
                    + xi[i, 2, ln] * f[s, 2, ln]
                ) + (
                    xi[i, 3, ln] * f[s, 3, ln]
                    + xi[i, 4, ln] * f[s, 4, ln]
                    + xi[i, 5, ln] * f[s, 5, ln]
                )


@nb.njit(**INLINE)
def _phi_times_unit(mom: np.ndarray, j: int, s: int, f: np.ndarray, row: int, ln: int) -> None:
    """``Phi(mom[j]) @ e`` of the root's unit screw ``s`` into ``f[row, :, ln]``."""
    ax = ay = az = mx = my = mz = 0.0
    if s == 0:
        mx = 1.0
    elif s == 1:
        my = 1.0
    elif s == 2:
        mz = 1.0
    elif s == 3:
        ax = 1.0
    elif s == 4:
        ay = 1.0
    else:
        az = 1.0
    m0, m1x, m1y, m1z = mom[j, 0, ln], mom[j, 1, ln], mom[j, 2, ln], mom[j, 3, ln]
    xx, yy, zz = mom[j, 4, ln], mom[j, 5, ln], mom[j, 6, ln]
    xy, xz, yz = mom[j, 7, ln], mom[j, 8, ln], mom[j, 9, ln]
    tr = xx + yy + zz
    f[row, 0, ln] = tr * ax - (xx * ax + xy * ay + xz * az) + (m1y * mz - m1z * my)
    f[row, 1, ln] = tr * ay - (xy * ax + yy * ay + yz * az) + (m1z * mx - m1x * mz)
    f[row, 2, ln] = tr * az - (xz * ax + yz * ay + zz * az) + (m1x * my - m1y * mx)
    f[row, 3, ln] = m0 * mx - (m1y * az - m1z * ay)
    f[row, 4, ln] = m0 * my - (m1z * ax - m1x * az)
    f[row, 5, ln] = m0 * mz - (m1x * ay - m1y * ax)


@nb.njit(**NOALIAS_JIT)
def damp_lanes(
    tb: Tables,
    hd: np.ndarray,
    g: np.ndarray,
    q: np.ndarray,
    prior: np.ndarray,
    lam: np.ndarray,
    angle_floor: float,
    task_weight: np.ndarray,
    task_target: np.ndarray,
    bound: np.ndarray,
    limits: bool,
) -> None:
    """:func:`.loop.damp_system` of every lane.

    ``lam`` is ``(L,)``; ``task_target`` and ``bound`` are ``(N, L)``.
    """
    nl = hd.shape[1]
    nr = tb.n_root
    for s in range(nr):
        fl = 1.0 if s < 3 else angle_floor
        for ln in range(nl):
            hd[s, ln] += lam[ln] * max(hd[s, ln], fl)
    angular, lower, upper, neutral = tb.angular, tb.lower, tb.upper, tb.neutral
    for k in range(tb.dof_type.shape[0]):
        s = nr + k
        fl = angle_floor if angular[k] else 1.0
        hold = held(lower[k], upper[k])
        pk, wk, nk = prior[k], task_weight[k], neutral[k]
        for ln in range(nl):
            d = hd[s, ln] + pk + wk
            hd[s, ln] = d + lam[ln] * max(d, fl)
            g[s, ln] -= pk * (q[k, ln] - nk) + wk * (q[k, ln] - task_target[k, ln])
            bound[k, ln] = limits and not hold and at_limit(q[k, ln], lower[k], upper[k], g[s, ln])
            if hold or bound[k, ln]:
                g[s, ln] = 0.0
                hd[s, ln] = HELD_STIFFNESS * (hd[s, ln] + 1.0)


@nb.njit(**NOALIAS_JIT)
def solve_tree_lanes(
    tb: Tables,
    hd: np.ndarray,
    hc: np.ndarray,
    hr: np.ndarray,
    g: np.ndarray,
    x: np.ndarray,
    inv: np.ndarray,
    lk: np.ndarray,
    ok: np.ndarray,
    bound: np.ndarray,
) -> None:
    """:func:`.normal.solve_tree` and :func:`.loop.hold_step` of every lane.

    ``inv`` and ``lk`` ``(L,)`` are scratch (a pivot's inverse, and an entry times it,
    computed once per entry as the scalar code's ``h * inv * h'`` does first); ``ok``
    ``(L,)`` bool is set False where a pivot is not positive and finite or the solution is
    not finite (that lane's ``x`` is then zero).
    """
    anc, ld = tb.ancestors, tb.local_depth
    nl = hd.shape[1]
    n = hd.shape[0]
    nr = tb.n_root
    for ln in range(nl):
        ok[ln] = True
    for k in range(n - 1, nr - 1, -1):
        for ln in range(nl):
            d = hd[k, ln]
            ok[ln] = ok[ln] and (d > 0.0 and d < np.inf)
            inv[ln] = 1.0 / d
        nk = ld[k]
        for m in range(nk):
            i = anc[k, m]
            for ln in range(nl):
                hkm = hc[k, m, ln]
                lki = hkm * inv[ln]
                lk[ln] = lki
                hd[i, ln] -= lki * hkm
            for p in range(nk - m - 1):
                for ln in range(nl):
                    hc[i, p, ln] -= lk[ln] * hc[k, m + 1 + p, ln]
            for c in range(nr):
                for ln in range(nl):
                    hr[i, c, ln] -= lk[ln] * hr[k, c, ln]
        for m in range(nk):
            for ln in range(nl):
                hc[k, m, ln] *= inv[ln]
        for a in range(nr):
            for ln in range(nl):
                lk[ln] = hr[k, a, ln] * inv[ln]
                hd[a, ln] -= lk[ln] * hr[k, a, ln]
            for b in range(a):
                for ln in range(nl):
                    hr[a, b, ln] -= lk[ln] * hr[k, b, ln]
        for a in range(nr):
            for ln in range(nl):
                hr[k, a, ln] = hr[k, a, ln] * inv[ln]
    for k in range(nr - 1, -1, -1):  # the root block, densely
        for ln in range(nl):
            d = hd[k, ln]
            ok[ln] = ok[ln] and (d > 0.0 and d < np.inf)
            inv[ln] = 1.0 / d
        for a in range(k):
            for ln in range(nl):
                lk[ln] = hr[k, a, ln] * inv[ln]
                hd[a, ln] -= lk[ln] * hr[k, a, ln]
            for b in range(a):
                for ln in range(nl):
                    hr[a, b, ln] -= lk[ln] * hr[k, b, ln]
        for a in range(k):
            for ln in range(nl):
                hr[k, a, ln] *= inv[ln]
    for k in range(n - 1, nr - 1, -1):  # substitution, leaves first
        for m in range(ld[k]):
            i = anc[k, m]
            for ln in range(nl):
                g[i, ln] -= hc[k, m, ln] * g[k, ln]
        for c in range(nr):
            for ln in range(nl):
                g[c, ln] -= hr[k, c, ln] * g[k, ln]
    for k in range(nr - 1, -1, -1):
        for c in range(k):
            for ln in range(nl):
                g[c, ln] -= hr[k, c, ln] * g[k, ln]
    for k in range(n):  # back-substitution, root first
        for ln in range(nl):
            x[k, ln] = g[k, ln] / hd[k, ln]
        if k < nr:
            for c in range(k):
                for ln in range(nl):
                    x[k, ln] -= hr[k, c, ln] * x[c, ln]
            continue
        for m in range(ld[k]):
            i = anc[k, m]
            for ln in range(nl):
                x[k, ln] -= hc[k, m, ln] * x[i, ln]
        if nr:
            for ln in range(nl):
                x[k, ln] -= (
                    hr[k, 0, ln] * x[0, ln] + hr[k, 1, ln] * x[1, ln] + hr[k, 2, ln] * x[2, ln]
                ) + (hr[k, 3, ln] * x[3, ln] + hr[k, 4, ln] * x[4, ln] + hr[k, 5, ln] * x[5, ln])
    for k in range(n):
        for ln in range(nl):
            ok[ln] = ok[ln] and math.isfinite(x[k, ln])
    for k in range(n):
        for ln in range(nl):
            if not ok[ln]:
                x[k, ln] = 0.0
    for k in range(tb.dof_type.shape[0]):
        hold = held(tb.lower[k], tb.upper[k])
        for ln in range(nl):
            if hold or bound[k, ln]:
                x[nr + k, ln] = 0.0
