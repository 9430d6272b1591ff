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

from pipeline.solve.compiled.tables import Tables
from pipeline.solve.rules import INLINE, JIT

__all__ = ["assemble", "factor_tree", "solve_tree"]


@nb.njit(**INLINE)
def _phi_times(mom: np.ndarray, j: int, xi: np.ndarray, s: int, out: np.ndarray) -> None:
    """``out[s] = Phi(mom[j]) @ xi[s]``, ``Phi = [[tr(M2) I - M2, [m1]x], [-[m1]x, m0 I]]``."""
    m0, m1x, m1y, m1z = mom[j, 0], mom[j, 1], mom[j, 2], mom[j, 3]
    xx, yy, zz, xy, xz, yz = mom[j, 4], mom[j, 5], mom[j, 6], mom[j, 7], mom[j, 8], mom[j, 9]
    ax, ay, az, mx, my, mz = xi[s, 0], xi[s, 1], xi[s, 2], xi[s, 3], xi[s, 4], xi[s, 5]
    tr = xx + yy + zz
    out[s, 0] = tr * ax - (xx * ax + xy * ay + xz * az) + (m1y * mz - m1z * my)
    out[s, 1] = tr * ay - (xy * ax + yy * ay + yz * az) + (m1z * mx - m1x * mz)
    out[s, 2] = tr * az - (xz * ax + yz * ay + zz * az) + (m1x * my - m1y * mx)
    out[s, 3] = m0 * mx - (m1y * az - m1z * ay)
    out[s, 4] = m0 * my - (m1z * ax - m1x * az)
    out[s, 5] = m0 * mz - (m1x * ay - m1y * ax)


@nb.njit(**JIT)
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
    f: np.ndarray,
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
    root_pos : (3,)
    res : (J, 3) residuals; weff : (J,) effective weights
    mom : (J + 1, 16) scratch
        Moments of the keypoints strictly below each joint (row ``J``: all keypoints):
        ``w``, ``w p`` (3), ``w p p^T`` (xx, yy, zz, xy, xz, yz), ``w p x r`` (3),
        ``w r`` (3).
    xi, f : (n_state, 6) scratch
        Screws and ``Phi @ xi`` of every state coordinate.
    hd : (n_state,) out
        Diagonal of the normal matrix.
    hc : (n_state, max_local_depth) out
        ``hc[s, m]``: the entry of ``s`` and its DOF ancestor ``Tables.ancestors[s, m]``,
        ``m < Tables.local_depth[s]``.
    hr : (n_state, 6) out
        ``hr[s, c]``: the entry of ``s`` and root coordinate ``c < s`` (free base only).
    g : (n_state,) out
    """
    nj = pos.shape[0]
    nr = tb.n_root
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
        _phi_times(mom, nj, xi, s, f)
        g[s] = mom[nj, 13 + s] if s < 3 else mom[nj, 10 + s - 3]
    for k in range(tb.dof_joint.shape[0]):
        s = nr + k
        jk = tb.dof_joint[k]
        ux, uy, uz = axes[k, 0], axes[k, 1], axes[k, 2]
        if tb.angular[k]:
            ox = pivots[k, 0] - root_pos[0]
            oy = pivots[k, 1] - root_pos[1]
            oz = pivots[k, 2] - root_pos[2]
            xi[s, 0], xi[s, 1], xi[s, 2] = ux, uy, uz
            xi[s, 3] = oy * uz - oz * uy
            xi[s, 4] = oz * ux - ox * uz
            xi[s, 5] = ox * uy - oy * ux
        else:
            xi[s, 0] = xi[s, 1] = xi[s, 2] = 0.0
            xi[s, 3], xi[s, 4], xi[s, 5] = ux, uy, uz
        _phi_times(mom, jk, xi, s, f)
        acc = 0.0
        for c in range(6):
            acc += xi[s, c] * mom[jk, 10 + c]
        g[s] = acc
    for s in range(nr + tb.dof_joint.shape[0]):
        acc = 0.0
        for c in range(6):
            acc += xi[s, c] * f[s, c]
        hd[s] = acc
        for m in range(tb.local_depth[s]):
            i = tb.ancestors[s, m]
            acc = 0.0
            for c in range(6):
                acc += xi[i, c] * f[s, c]
            hc[s, m] = acc
        # the root's screws are unit vectors: their products select components of f
        for c in range(min(s, nr)):
            hr[s, c] = f[s, (c + 3) % 6]


@nb.njit(**JIT)
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
        for m in range(nk):
            i = anc[k, m]
            hkm = hc[k, m]
            lki = hkm * inv
            hd[i] -= lki * hkm
            for p in range(nk - m - 1):
                hc[i, p] -= lki * hc[k, m + 1 + p]
            if nr:
                for c in range(6):
                    hr[i, c] -= lki * hr[k, c]
        for m in range(nk):
            hc[k, m] *= inv
        if nr:
            for a in range(6):
                la = hr[k, a] * inv
                hd[a] -= la * hr[k, a]
                for b in range(a):
                    hr[a, b] -= la * hr[k, b]
            for c in range(6):
                hr[k, c] *= inv
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


@nb.njit(**JIT)
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
    for k in range(n - 1, -1, -1):  # eliminate the right-hand side, leaves first
        y = g[k]
        if k >= nr:
            for m in range(ld[k]):
                g[anc[k, m]] -= hc[k, m] * y
            for c in range(nr):
                g[c] -= hr[k, c] * y
        else:
            for c in range(k):
                g[c] -= hr[k, c] * y
    for k in range(n):  # back-substitute, root first
        acc = g[k] / hd[k]
        if k >= nr:
            for m in range(ld[k]):
                acc -= hc[k, m] * x[anc[k, m]]
            for c in range(nr):
                acc -= hr[k, c] * x[c]
        else:
            for c in range(k):
                acc -= hr[k, c] * x[c]
        x[k] = acc
    for k in range(n):
        if not math.isfinite(x[k]):
            x[:] = 0.0
            return False
    return True
