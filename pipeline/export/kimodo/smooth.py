"""Kimodo's ``smooth_root``: the smoothest 2D path within a radius of the pelvis track.

Kimodo format, part 5.2: find ``x_t`` in R^2 minimising ``sum_t |x_{t-1} - 2 x_t + x_{t+1}|^2``
subject to ``|x_t - p_t| <= radius`` for every frame, by ADMM (over-relaxation 1.8, 500
iterations per level, ``rho = 0.25 sqrt(max diag(A^T A))`` with ``A`` the second-difference
matrix), coarse to fine: start at stride ``2**max(floor(log2 T) - 4, 1)`` from the mean of
the track, solve on the subsampled frames, fill the frames in between by linear
interpolation, halve the stride, repeat down to stride 1. The returned path is the ADMM
variable that is projected onto the discs, so it is always within ``radius`` of the
pelvis, converged or not.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import splu

__all__ = ["SMOOTH_ROOT_RADIUS", "smooth_root_2d"]

#: Largest distance (m) between the smoothed root and the pelvis (Kimodo's tolerance).
SMOOTH_ROOT_RADIUS = 0.06
_ALPHA = 1.8
_ITERATIONS = 500


def _second_difference(n: int) -> sp.csc_matrix:
    ones = np.ones(n - 2)
    return sp.diags([ones, -2 * ones, ones], [0, 1, 2], shape=(n - 2, n), format="csc")


def _project(v: np.ndarray, centre: np.ndarray, radius: float) -> np.ndarray:
    d = v - centre
    norm = np.linalg.norm(d, axis=1, keepdims=True)
    return centre + d * np.minimum(1.0, radius / np.maximum(norm, 1e-300))


def _admm(target: np.ndarray, start: np.ndarray, radius: float, iterations: int) -> np.ndarray:
    n = target.shape[0]
    if n < 3:
        return _project(start, target, radius)
    a = _second_difference(n)
    ata = (a.T @ a).tocsc()
    rho = 0.25 * float(np.sqrt(ata.diagonal().max()))
    lu = splu((2.0 * ata + rho * sp.identity(n, format="csc")).tocsc())
    z = _project(start, target, radius)
    u = np.zeros_like(z)
    for _ in range(iterations):
        x = lu.solve(rho * (z - u))
        relaxed = _ALPHA * x + (1.0 - _ALPHA) * z
        z = _project(relaxed + u, target, radius)
        u = u + relaxed - z
    return z


def _fill(frames: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Linear interpolation onto ``0..n-1``, extrapolating past the last sample."""
    t = np.arange(n, dtype=np.float64)
    out = np.empty((n, values.shape[1]))
    for c in range(values.shape[1]):
        out[:, c] = np.interp(t, frames, values[:, c])
    if frames.size >= 2 and frames[-1] < n - 1:
        slope = (values[-1] - values[-2]) / (frames[-1] - frames[-2])
        tail = t > frames[-1]
        out[tail] = values[-1] + (t[tail, None] - frames[-1]) * slope
    return out


def smooth_root_2d(
    pelvis_xz: np.ndarray, radius: float = SMOOTH_ROOT_RADIUS, iterations: int = _ITERATIONS
) -> np.ndarray:
    """Smooth a pelvis ground track the way Kimodo does.

    Parameters
    ----------
    pelvis_xz : (T, 2) array
        Pelvis ``(x, z)`` per frame (m).
    radius : float
        Largest allowed distance from the pelvis (m), 0.06 in Kimodo.
    iterations : int
        ADMM iterations per level.

    Returns
    -------
    (T, 2) array
        The smoothed path; every frame within ``radius`` of ``pelvis_xz``.
    """
    p = np.asarray(pelvis_xz, dtype=np.float64)
    n = p.shape[0]
    if n == 0:
        return p.copy()
    stride = 2 ** max(int(np.floor(np.log2(n))) - 4, 1) if n > 1 else 1
    path = np.broadcast_to(p.mean(axis=0), p.shape).copy()
    while True:
        frames = np.arange(0, n, stride)
        solved = _admm(p[frames], path[frames], radius, iterations)
        path = _fill(frames.astype(np.float64), solved, n) if stride > 1 else solved
        if stride == 1:
            return path
        stride //= 2
