"""Compiled per-frame uncertainty: the diagonal of the inverse tree-sparse normal matrix.

At a frame's fitted pose the kernel assembles ``J^T W J`` once more (:func:`.normal.assemble`),
adds the neutral prior ``P`` and factors ``A = J^T W J + P = L^T D L`` without fill
(:func:`.normal.factor_tree`). Then ``A^-1 = X D^-1 X^T`` with ``X = L^-1``, so

    diag(A^-1)[k] = sum_i X[k, i]^2 / D[i],

and the rows of ``X`` follow from ``L X = I`` root first,
``X[k, j] = delta_kj - sum_{a in S(k)} L[k, a] X[a, j]``, ``S(k)`` the ancestors of ``k``
(its row's pattern): ``X[k]`` is nonzero on ``S(k)`` only, and ``X[a, j]`` on the
ancestors of ``a``, so every row is computed on the factor's own pattern. The cost is the
factorization's: no dense ``n x n`` inverse. What the numpy side
(:mod:`pipeline.solve.temporal.uncertainty`) needs besides is returned per frame too: the
diagonal of ``J^T W J`` (observability) and the weighted residual sums (noise level).

As there, the system is Jacobi-regularized (``A + 1e-12 diag(A)``) and a coordinate with
neither information nor prior gets ``inf``.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from pipeline.solve.compiled.bundles import Outputs, Workspace
from pipeline.solve.compiled.compilers import NOREFCOUNT_JIT
from pipeline.solve.compiled.normal import assemble, factor_tree
from pipeline.solve.compiled.tables import Tables

__all__ = ["REGULARIZE", "frame_precision", "inverse_diagonal", "precision_of"]

#: Relative ridge added to the normal matrix's diagonal before it is inverted.
REGULARIZE = 1e-12


@nb.njit(**NOREFCOUNT_JIT)
def inverse_diagonal(
    tb: Tables,
    hd: np.ndarray,
    hc: np.ndarray,
    hr: np.ndarray,
    zd: np.ndarray,
    zc: np.ndarray,
    zr: np.ndarray,
) -> None:
    """Diagonal of ``A^-1`` from the factors ``A = L^T D L`` (see the module docstring).

    Parameters
    ----------
    tb : Tables
    hd, hc, hr : (n,), (n, max_local_depth), (n, 6)
        ``D`` and ``L`` from :func:`.normal.factor_tree`; ``hd`` is overwritten by ``1 / D``.
    zd : (n,) out
        ``diag(A^-1)``.
    zc, zr : (n, max_local_depth), (n, 6) out
        Rows of ``X = L^-1`` on the pattern (stored as ``hc``, ``hr`` store ``L``).
    """
    anc, ld = tb.ancestors, tb.local_depth
    n = hd.shape[0]
    nr = tb.n_root
    for k in range(n):  # hd becomes 1 / D
        hd[k] = 1.0 / hd[k]
    for k in range(nr):  # the root block, densely: X[k, c] for c < k
        acc2 = hd[k]
        for c in range(k):
            acc = hr[k, c]
            for a in range(c + 1, k):
                acc += hr[k, a] * zr[a, c]
            zr[k, c] = -acc
            acc2 += acc * acc * hd[c]
        zd[k] = acc2
    for k in range(nr, n):  # DOFs, parents before children; -X[k] accumulated first
        nk = ld[k]
        for m in range(nk):
            zc[k, m] = hc[k, m]
        for c in range(nr):
            zr[k, c] = hr[k, c]
        for m in range(nk):  # ancestor a = anc[k, m] reaches the ancestors above it
            a = anc[k, m]
            lka = hc[k, m]
            for p in range(nk - m - 1):
                zc[k, m + 1 + p] += lka * zc[a, p]
            for c in range(nr):
                zr[k, c] += lka * zr[a, c]
        for c in range(nr):  # root coordinates below c reach it
            acc = zr[k, c]
            for c2 in range(c + 1, nr):
                acc += hr[k, c2] * zr[c2, c]
            zr[k, c] = acc
        acc2 = hd[k]
        for m in range(nk):
            x = zc[k, m]
            zc[k, m] = -x
            acc2 += x * x * hd[anc[k, m]]
        for c in range(nr):
            x = zr[k, c]
            zr[k, c] = -x
            acc2 += x * x * hd[c]
        zd[k] = acc2


@nb.njit(**NOREFCOUNT_JIT)
def precision_of(
    tb: Tables,
    prior: np.ndarray,
    hd: np.ndarray,
    hc: np.ndarray,
    hr: np.ndarray,
    zd: np.ndarray,
    zc: np.ndarray,
    zr: np.ndarray,
    information: np.ndarray,
    inverse: np.ndarray,
) -> None:
    """The diagonals of an assembled ``J^T W J`` and of ``(J^T W J + P)^-1``.

    Parameters
    ----------
    tb : Tables
    prior : (N,)
        The neutral prior's diagonal (effective ``neutral_weight`` times the scalers).
    hd, hc, hr : the undamped normal matrix as :func:`.normal.assemble` stores it; overwritten
    zd, zc, zr : scratch
    information : (n_state,) out
        Diagonal of ``J^T W J``.
    inverse : (n_state,) out
        Diagonal of ``(J^T W J + P)^-1``; ``inf`` where the coordinate has neither
        information nor prior, or where the system cannot be factored.
    """
    nr = tb.n_root
    ns = hd.shape[0]
    for s in range(ns):
        information[s] = hd[s]
        d = hd[s] + (prior[s - nr] if s >= nr else 0.0)
        # nothing at all: decouple it (its row is exactly zero) and report inf below
        hd[s] = d * (1.0 + REGULARIZE) if d > 0.0 else 1.0
        inverse[s] = 0.0 if d > 0.0 else np.inf
    if not factor_tree(tb, hd, hc, hr):
        inverse[:] = np.inf
        return
    inverse_diagonal(tb, hd, hc, hr, zd, zc, zr)
    for s in range(ns):
        if inverse[s] == 0.0:
            inverse[s] = zd[s]


@nb.njit(**NOREFCOUNT_JIT)
def frame_precision(tb: Tables, ws: Workspace, out: Outputs, t: int, prior: np.ndarray) -> None:
    """The uncertainty inputs of fitted frame ``t`` of 3D observations.

    Parameters
    ----------
    tb : Tables
    ws : Workspace
        ``axes``, ``pivots``, ``res`` and ``weff`` at the fitted pose (its forward
        kinematics and objective); the normal-system buffers are scratch.
    out : Outputs
        Holds the fitted pose's ``root_position[t]`` and ``fitted_position[t]``; fills
        ``information[t]`` and ``inverse[t]`` (as :func:`precision_of`'s) and
        ``moments[t]``: ``sum w |r|^2``, ``sum w`` and the number of observed residual rows.
    t : int
    prior : (N,)
        The neutral prior's diagonal.
    """
    res, weff = ws.res, ws.weff
    assemble(tb, out.fitted_position[t], ws.axes, ws.pivots, out.root_position[t], res, weff,
             ws.mom, ws.xi, ws.hd, ws.hc, ws.hr, ws.g)  # fmt: skip
    wr2 = 0.0
    wsum = 0.0
    rows = 0.0
    for j in range(weff.shape[0]):
        w = weff[j]
        if w > 0.0:
            wr2 += w * (res[j, 0] ** 2 + res[j, 1] ** 2 + res[j, 2] ** 2)
            wsum += w
            rows += 3.0
    moments = out.moments[t]
    moments[0], moments[1], moments[2] = wr2, wsum, rows
    precision_of(tb, prior, ws.hd, ws.hc, ws.hr, ws.zd, ws.zc, ws.zr, out.information[t],
                 out.inverse[t])  # fmt: skip
