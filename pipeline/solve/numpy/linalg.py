"""Batched dense solves vectorized over the batch, for many tiny SPD systems.

``np.linalg.solve`` calls LAPACK once per matrix, which costs about a microsecond each for
7x7 systems; eliminating column by column with numpy calls over the whole batch costs
a few dozen calls in total, whatever the batch size. The batch is moved to the last
axis so that every numpy call runs over contiguous memory.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["spd_solve"]


def spd_solve(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Solve ``a @ x = b`` for symmetric positive definite ``a`` (Gaussian elimination).

    No pivoting: the normal matrices the solver builds are damped, hence positive
    definite. A non-positive or non-finite pivot marks the system as failed instead of
    producing NaN.

    Parameters
    ----------
    a : (..., n, n) array
    b : (..., n, r) array

    Returns
    -------
    x : (..., n, r) array
        Zero where the system failed.
    ok : (...) bool array
        False where a pivot was not positive and finite.
    """
    lead = a.shape[:-2]
    n, r = a.shape[-1], b.shape[-1]
    m = math.prod(lead)
    at = np.ascontiguousarray(a.reshape(m, n, n).transpose(1, 2, 0))  # (n, n, M)
    bt = np.ascontiguousarray(b.reshape(m, n, r).transpose(1, 2, 0))  # (n, r, M)
    ok = np.ones(m, dtype=bool)
    pivots = np.empty((n, m), dtype=a.dtype)
    for k in range(n):
        piv = at[k, k]
        good = np.isfinite(piv) & (piv > 0)
        ok &= good
        piv = np.where(good, piv, 1.0).astype(a.dtype, copy=False)
        pivots[k] = piv
        if k + 1 < n:
            f = at[k + 1 :, k] / piv  # (n-k-1, M)
            at[k + 1 :, k + 1 :] -= f[:, None] * at[k, None, k + 1 :]
            bt[k + 1 :] -= f[:, None] * bt[k, None]
    x = np.empty_like(bt)
    for k in range(n - 1, -1, -1):
        acc = bt[k]
        if k + 1 < n:
            acc = acc - np.einsum("jm,jrm->rm", at[k, k + 1 :], x[k + 1 :])
        x[k] = acc / pivots[k]
    ok &= np.isfinite(x).all(axis=(0, 1))
    x[..., ~ok] = 0.0
    return x.transpose(2, 0, 1).reshape(lead + (n, r)), ok.reshape(lead)
