"""Compiled normal equations of one frame: subtree moments and a no-fill tree factorization.

Assembly is :mod:`pipeline.solve.numpy.moments` done one joint at a time: every Jacobian column
is a screw ``xi = (a, m)`` moving keypoint ``p`` by ``a x p + m``, so the entry of two
coordinates on one path is ``xi_k^T Phi_l xi_l`` with ``Phi_l`` made of the moments of
the keypoints that the lower coordinate ``l`` moves, and the gradient entry is
``a_k . sum w p x r + m_k . sum w r``. Positions are relative to the root position.

The damped normal matrix is nonzero only between a coordinate and its ancestors
(``Tables.ancestors``), so it is stored by rows over ancestors and factors as
``L^T D L`` leaves-first with no fill (Featherstone, "Efficient factorization of the
joint-space inertia matrix", 2005).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from pipeline.solve.compiled.driven import screw
from pipeline.solve.compiled.tables import Tables
from pipeline.solve.rules import INLINE

__all__ = ["assemble", "factor_tree", "solve_tree"]


@nb.njit(**INLINE)
def _phi_times(mom: np.ndarray, j: int, ax, ay, az, mx, my, mz) -> tuple:
    """``Phi(mom[j]) @ xi`` of the screw ``xi = (a, m)``.

    ``Phi = [[tr(M2) I - M2, [m1]x], [-[m1]x, m0 I]]``; returned as six scalars, so the
    caller's products with it stay in registers.
    """
    m0, m1x, m1y, m1z = mom[j, 0], mom[j, 1], mom[j, 2], mom[j, 3]
    xx, yy, zz, xy, xz, yz = mom[j, 4], mom[j, 5], mom[j, 6], mom[j, 7], mom[j, 8], mom[j, 9]
    tr = xx + yy + zz
    return (
        tr * ax - (xx * ax + xy * ay + xz * az) + (m1y * mz - m1z * my),
        tr * ay - (xy * ax + yy * ay + yz * az) + (m1z * mx - m1x * mz),
        tr * az - (xz * ax + yz * ay + zz * az) + (m1x * my - m1y * mx),
        m0 * mx - (m1y * az - m1z * ay),
        m0 * my - (m1z * ax - m1x * az),
        m0 * mz - (m1x * ay - m1y * ax),
    )


@nb.njit(**INLINE)
def assemble(
    tb: Tables,
    pos: np.ndarray,
    axes: np.ndarray,
    pivots: np.ndarray,
    root_pos: np.ndarray,
    res: np.ndarray,
    weff: np.ndarray,
    mom: np.ndarray,
    xi: np.ndarray,
    hd: np.ndarray,
    hc: np.ndarray,
    hr: np.ndarray,
    g: np.ndarray,
) -> None:
    """Gauss-Newton normal matrix (ancestor entries only) and gradient of one frame.

    Parameters
    ----------
    tb : Tables
    pos : (J, 3) keypoints; axes, pivots : (N, 3) from :func:`~.forward.fk`
        (a coupled plan: ``(N + G, 3)`` screws, :mod:`~pipeline.solve.compiled.driven`)
    root_pos : (3,)
    res : (J, 3) residuals; weff : (J,) effective weights
    mom : (J + 1, 16) scratch
        Moments of the keypoints strictly below each joint (row ``J``: all keypoints):
        ``w``, ``w p`` (3), ``w p p^T`` (xx, yy, zz, xy, xz, yz), ``w p x r`` (3),
        ``w r`` (3).
    xi : (n_state, 6) scratch
        Screws of every state coordinate.
    hd : (n_state,) out
        Diagonal of the normal matrix.
    hc : (n_state, max_local_depth) out
        ``hc[s, m]``: the entry of ``s`` and its DOF ancestor ``Tables.ancestors[s, m]``,
        ``m < Tables.local_depth[s]``.
    hr : (n_state, 6) out
        ``hr[s, c]``: the entry of ``s`` and root coordinate ``c < s`` (free base only).
    g : (n_state,) out

    Notes
    -----
    One pass over the coordinates in state order: a coordinate's screw is stored (its
    descendants need it), while ``Phi @ xi`` stays in registers for its row's entries,
    since ancestors come first and their screws are already there.
    """
    nj = pos.shape[0]
    nr = tb.n_root
    anc, ld = tb.ancestors, tb.local_depth
    for j in range(nj + 1):
        for c in range(16):
            mom[j, c] = 0.0
    for j in range(nj - 1, -1, -1):  # children follow parents: one reverse pass
        w = weff[j]
        px = pos[j, 0] - root_pos[0]
        py = pos[j, 1] - root_pos[1]
        pz = pos[j, 2] - root_pos[2]
        rx, ry, rz = w * res[j, 0], w * res[j, 1], w * res[j, 2]
        wx, wy, wz = w * px, w * py, w * pz
        p = tb.parent[j]
        if p < 0:
            p = nj
        mom[p, 0] += w + mom[j, 0]
        mom[p, 1] += wx + mom[j, 1]
        mom[p, 2] += wy + mom[j, 2]
        mom[p, 3] += wz + mom[j, 3]
        mom[p, 4] += wx * px + mom[j, 4]
        mom[p, 5] += wy * py + mom[j, 5]
        mom[p, 6] += wz * pz + mom[j, 6]
        mom[p, 7] += wx * py + mom[j, 7]
        mom[p, 8] += wx * pz + mom[j, 8]
        mom[p, 9] += wy * pz + mom[j, 9]
        mom[p, 10] += (py * rz - pz * ry) + mom[j, 10]
        mom[p, 11] += (pz * rx - px * rz) + mom[j, 11]
        mom[p, 12] += (px * ry - py * rx) + mom[j, 12]
        mom[p, 13] += rx + mom[j, 13]
        mom[p, 14] += ry + mom[j, 14]
        mom[p, 15] += rz + mom[j, 15]
    for s in range(nr):  # root translations (0, e), then rotations about root_pos (e, 0)
        for c in range(6):
            xi[s, c] = 0.0
        xi[s, (s + 3) % 6] = 1.0
        e = _phi_times(mom, nj, xi[s, 0], xi[s, 1], xi[s, 2], xi[s, 3], xi[s, 4], xi[s, 5])
        g[s] = mom[nj, 13 + s] if s < 3 else mom[nj, 10 + s - 3]
        # the root's screws are unit vectors: their products select components of Phi xi
        hd[s] = e[(s + 3) % 6]
        for c in range(s):
            hr[s, c] = e[(c + 3) % 6]
    for k in range(tb.dof_joint.shape[0]):
        s = nr + k
        jk = tb.dof_joint[k]
        ux, uy, uz = axes[k, 0], axes[k, 1], axes[k, 2]
        if tb.coupled:  # the DOF's screw on its own joint's subtree
            ax, ay, az, mx, my, mz = screw(axes, pivots, k, root_pos)
        elif tb.angular[k]:
            ox = pivots[k, 0] - root_pos[0]
            oy = pivots[k, 1] - root_pos[1]
            oz = pivots[k, 2] - root_pos[2]
            ax, ay, az = ux, uy, uz
            mx, my, mz = oy * uz - oz * uy, oz * ux - ox * uz, ox * uy - oy * ux
        else:
            ax = ay = az = 0.0
            mx, my, mz = ux, uy, uz
        xi[s, 0], xi[s, 1], xi[s, 2], xi[s, 3], xi[s, 4], xi[s, 5] = ax, ay, az, mx, my, mz
        f0, f1, f2, f3, f4, f5 = _phi_times(mom, jk, ax, ay, az, mx, my, mz)
        g[s] = (ax * mom[jk, 10] + ay * mom[jk, 11] + az * mom[jk, 12]) + (
            mx * mom[jk, 13] + my * mom[jk, 14] + mz * mom[jk, 15]
        )
        hd[s] = (ax * f0 + ay * f1 + az * f2) + (mx * f3 + my * f4 + mz * f5)
        for e in range(tb.extra_start[k], tb.extra_start[k + 1]):
            # an extra group: the same DOF moving a disjoint subtree; its Phi xi joins the
            # row's (entries with ancestors), its own product the diagonal and gradient
            je = tb.extra_joint[e]
            bx, by, bz, nx, ny, nz = screw(axes, pivots, tb.dof_joint.shape[0] + e, root_pos)
            e0, e1, e2, e3, e4, e5 = _phi_times(mom, je, bx, by, bz, nx, ny, nz)
            g[s] += (bx * mom[je, 10] + by * mom[je, 11] + bz * mom[je, 12]) + (
                nx * mom[je, 13] + ny * mom[je, 14] + nz * mom[je, 15]
            )
            hd[s] += (bx * e0 + by * e1 + bz * e2) + (nx * e3 + ny * e4 + nz * e5)
            f0, f1, f2, f3, f4, f5 = f0 + e0, f1 + e1, f2 + e2, f3 + e3, f4 + e4, f5 + e5
        for m in range(ld[s]):
            i = anc[s, m]
            hc[s, m] = (xi[i, 0] * f0 + xi[i, 1] * f1 + xi[i, 2] * f2) + (
                xi[i, 3] * f3 + xi[i, 4] * f4 + xi[i, 5] * f5
            )
        if nr:  # the root's screws are unit vectors: their products select components
            hr[s, 0], hr[s, 1], hr[s, 2] = f3, f4, f5
            hr[s, 3], hr[s, 4], hr[s, 5] = f0, f1, f2
    fx, fc = tb.fix_int, tb.fix_coef
    for c in range(fx.shape[0]):  # a coupled plan's nested groups (.coupled_terms)
        a0, a1, a2, a3, a4, a5 = screw(axes, pivots, fx[c, 2], root_pos)
        b0, b1, b2, b3, b4, b5 = screw(axes, pivots, fx[c, 3], root_pos)
        e0, e1, e2, e3, e4, e5 = _phi_times(mom, fx[c, 4], b0, b1, b2, b3, b4, b5)
        v = fc[c] * ((a0 * e0 + a1 * e1 + a2 * e2) + (a3 * e3 + a4 * e4 + a5 * e5))
        if fx[c, 1] < 0:
            hd[fx[c, 0]] += v
        else:
            hc[fx[c, 0], fx[c, 1]] += v


@nb.njit(**INLINE)
def factor_tree(tb: Tables, hd: np.ndarray, hc: np.ndarray, hr: np.ndarray) -> bool:
    """Factor ``h = L^T D L`` in place along the tree, leaves first, with no fill.

    Storage (see :func:`assemble`): ``hd[s]`` is ``h[s, s]``; ``hc[s, m]`` is ``h[s, a]``
    for the DOF ancestor ``a = ancestors[s, m]``, ``m < local_depth[s]``; ``hr[s, c]`` is
    ``h[s, c]`` for the root coordinate ``c`` (every DOF has all six above it; a root
    coordinate ``s`` has those with ``c < s``). Because the DOF ancestors of
    ``ancestors[s, m]`` are ``ancestors[s, m + 1:]``, eliminating ``s`` updates each
    ancestor's row with a contiguous slice of its own, and its six root entries with
    fixed-length loops; the root block is eliminated last, densely.

    Parameters
    ----------
    tb : Tables
    hd : (n,); hc : (n, max_local_depth); hr : (n, 6)
        Overwritten by ``D`` (``hd``) and the unit lower factor ``L`` (``hc``, ``hr``:
        ``L[s, a]`` in the places of ``h[s, a]``).

    Returns
    -------
    bool
        False when a pivot is not positive and finite.
    """
    anc, ld = tb.ancestors, tb.local_depth
    n = hd.shape[0]
    nr = tb.n_root
    for k in range(n - 1, nr - 1, -1):
        d = hd[k]
        if not (d > 0.0 and d < np.inf):
            return False
        inv = 1.0 / d
        nk = ld[k]
        if nr:  # the row's six root entries, held in registers through the updates
            r0, r1, r2, r3, r4, r5 = hr[k, 0], hr[k, 1], hr[k, 2], hr[k, 3], hr[k, 4], hr[k, 5]
        else:
            r0 = r1 = r2 = r3 = r4 = r5 = 0.0
        for m in range(nk):
            i = anc[k, m]
            hkm = hc[k, m]
            lki = hkm * inv
            hd[i] -= lki * hkm
            for p in range(nk - m - 1):
                hc[i, p] -= lki * hc[k, m + 1 + p]
            if nr:
                hr[i, 0] -= lki * r0
                hr[i, 1] -= lki * r1
                hr[i, 2] -= lki * r2
                hr[i, 3] -= lki * r3
                hr[i, 4] -= lki * r4
                hr[i, 5] -= lki * r5
        for m in range(nk):
            hc[k, m] *= inv
        if nr:  # the root block's update, unrolled: hr[a, b] -= r_a r_b / d for b < a
            l0, l1, l2, l3, l4, l5 = r0 * inv, r1 * inv, r2 * inv, r3 * inv, r4 * inv, r5 * inv
            hd[0] -= l0 * r0
            hd[1] -= l1 * r1
            hd[2] -= l2 * r2
            hd[3] -= l3 * r3
            hd[4] -= l4 * r4
            hd[5] -= l5 * r5
            hr[1, 0] -= l1 * r0
            hr[2, 0] -= l2 * r0
            hr[2, 1] -= l2 * r1
            hr[3, 0] -= l3 * r0
            hr[3, 1] -= l3 * r1
            hr[3, 2] -= l3 * r2
            hr[4, 0] -= l4 * r0
            hr[4, 1] -= l4 * r1
            hr[4, 2] -= l4 * r2
            hr[4, 3] -= l4 * r3
            hr[5, 0] -= l5 * r0
            hr[5, 1] -= l5 * r1
            hr[5, 2] -= l5 * r2
            hr[5, 3] -= l5 * r3
            hr[5, 4] -= l5 * r4
            hr[k, 0], hr[k, 1], hr[k, 2], hr[k, 3], hr[k, 4], hr[k, 5] = l0, l1, l2, l3, l4, l5
    for k in range(nr - 1, -1, -1):  # the root block, densely
        d = hd[k]
        if not (d > 0.0 and d < np.inf):
            return False
        inv = 1.0 / d
        for a in range(k):
            la = hr[k, a] * inv
            hd[a] -= la * hr[k, a]
            for b in range(a):
                hr[a, b] -= la * hr[k, b]
        for a in range(k):
            hr[k, a] *= inv
    return True


@nb.njit(**INLINE)
def solve_tree(
    tb: Tables, hd: np.ndarray, hc: np.ndarray, hr: np.ndarray, g: np.ndarray, x: np.ndarray
) -> bool:
    """Solve ``h x = g`` in place: :func:`factor_tree`, then substitution leaves first.

    Parameters
    ----------
    tb : Tables
    hd : (n,); hc : (n, max_local_depth); hr : (n, 6)
        ``h`` as :func:`factor_tree` takes it; overwritten by its factors.
    g : (n,)
        Right-hand side; overwritten.
    x : (n,) out
        Solution (zero when the elimination fails).

    Returns
    -------
    bool
        False when a pivot is not positive and finite (``x`` is then zero).
    """
    anc, ld = tb.ancestors, tb.local_depth
    n = g.shape[0]
    nr = tb.n_root
    if not factor_tree(tb, hd, hc, hr):
        x[:] = 0.0
        return False
    # Substitution. The root's six entries of the right-hand side and of the solution are
    # held in registers: each DOF row updates (or reads) all six, and through memory
    # those updates would form one chain of dependent loads and stores.
    g0 = g1 = g2 = g3 = g4 = g5 = 0.0
    if nr:
        g0, g1, g2, g3, g4, g5 = g[0], g[1], g[2], g[3], g[4], g[5]
    for k in range(n - 1, nr - 1, -1):  # eliminate the right-hand side, leaves first
        y = g[k]
        for m in range(ld[k]):
            g[anc[k, m]] -= hc[k, m] * y
        if nr:
            g0 -= hr[k, 0] * y
            g1 -= hr[k, 1] * y
            g2 -= hr[k, 2] * y
            g3 -= hr[k, 3] * y
            g4 -= hr[k, 4] * y
            g5 -= hr[k, 5] * y
    if nr:
        g[0], g[1], g[2], g[3], g[4], g[5] = g0, g1, g2, g3, g4, g5
        for k in range(nr - 1, -1, -1):
            y = g[k]
            for c in range(k):
                g[c] -= hr[k, c] * y
        for k in range(nr):  # back-substitute, root first
            acc = g[k] / hd[k]
            for c in range(k):
                acc -= hr[k, c] * x[c]
            x[k] = acc
        x0, x1, x2, x3, x4, x5 = x[0], x[1], x[2], x[3], x[4], x[5]
    else:
        x0 = x1 = x2 = x3 = x4 = x5 = 0.0
    for k in range(nr, n):
        acc = g[k] / hd[k]
        for m in range(ld[k]):
            acc -= hc[k, m] * x[anc[k, m]]
        if nr:  # two independent partial sums
            acc -= (hr[k, 0] * x0 + hr[k, 1] * x1 + hr[k, 2] * x2) + (
                hr[k, 3] * x3 + hr[k, 4] * x4 + hr[k, 5] * x5
            )
        x[k] = acc
    for k in range(n):
        if not math.isfinite(x[k]):
            x[:] = 0.0
            return False
    return True
