"""Per-coordinate forward filter and RTS smoother of the frames' own fits (compiled).

``temporal="smooth"`` combines every frame's own fit with the constant-acceleration prior
of :mod:`.model`. Each frame's fit is a measurement of every coordinate with its own
marginal variance, the frame's ``temporal="none"`` uncertainty (the diagonal of
``s2 (J^T W J + P)^-1``, :mod:`.uncertainty`; computed in the compiled kernel); each
coordinate is then smoothed on its own, a three-state (value, velocity, acceleration)
Kalman filter forward and a Rauch-Tung-Striebel pass backward. A frame where a coordinate
is held only by the prior (a gap) has a large variance there, so the motion model bridges
it and the posterior variance grows through the gap.

Treating the coordinates separately drops the correlations within a frame's evidence:
exact for a frame whose normal matrix is diagonal, and otherwise using less information
than the frame holds (each coordinate is as uncertain as its marginal says, whatever the
others do), so the posterior is, if anything, conservative. What it buys is cost: a few
hundred flops per coordinate and frame instead of the dense ``3n x 3n`` filter's
``O(n^3)``, so smoothing costs a fraction of the fit itself.

The root orientation is smoothed as a rotation vector accumulated from the per-frame
world-frame increments ``log(q_t q_{t-1}^-1)``; the smoothed orientation is the measured
one turned by the (small) smoothed-minus-measured difference. Unbounded hinge angles are
unwrapped along time first.
"""

from __future__ import annotations

from typing import NamedTuple

import numba as nb
import numpy as np

from pipeline.kinematics.rotations import (
    quat_conjugate,
    quat_multiply,
    quat_to_rotvec,
    rotvec_to_quat,
)
from pipeline.solve.kernel_cache import stamp_package
from pipeline.solve.rules import JIT
from pipeline.solve.temporal.model import _F3, _Q3

# before the kernels below are decorated: their cache is stamped with this package's
# sources and the modules they import (the rules' constants, the model's matrices)
stamp_package("pipeline.solve.temporal")

__all__ = ["DIFFUSE", "Smoothed", "smooth_coordinates"]

#: Diffuse start: standard deviation of the first frame's value, velocity and
#: acceleration, in units of each coordinate's scale per frame.
DIFFUSE = 1e3


class Smoothed(NamedTuple):
    """Smoother posterior of every frame (``n`` coordinates, velocities per frame).

    Attributes
    ----------
    value : (T, n)
        Posterior mean; the root-rotation slots are zero (see ``orientation``).
    orientation : (T, 4) or None
        Posterior mean root orientation ``(w, x, y, z)``.
    velocity, acceleration : (T, n)
        Per frame and per frame squared.
    std : (T, n)
        Posterior standard deviation of the value.
    """

    value: np.ndarray
    orientation: np.ndarray | None
    velocity: np.ndarray
    acceleration: np.ndarray
    std: np.ndarray


@nb.njit(**JIT)
def _inv3(a: np.ndarray, out: np.ndarray) -> None:
    """``out = a^-1`` of a symmetric positive definite 3x3 matrix (adjugate)."""
    c00 = a[1, 1] * a[2, 2] - a[1, 2] * a[2, 1]
    c01 = a[1, 2] * a[2, 0] - a[1, 0] * a[2, 2]
    c02 = a[1, 0] * a[2, 1] - a[1, 1] * a[2, 0]
    det = a[0, 0] * c00 + a[0, 1] * c01 + a[0, 2] * c02
    inv = 1.0 / det
    out[0, 0] = c00 * inv
    out[1, 0] = c01 * inv
    out[2, 0] = c02 * inv
    out[0, 1] = (a[0, 2] * a[2, 1] - a[0, 1] * a[2, 2]) * inv
    out[1, 1] = (a[0, 0] * a[2, 2] - a[0, 2] * a[2, 0]) * inv
    out[2, 1] = (a[0, 1] * a[2, 0] - a[0, 0] * a[2, 1]) * inv
    out[0, 2] = (a[0, 1] * a[1, 2] - a[0, 2] * a[1, 1]) * inv
    out[1, 2] = (a[0, 2] * a[1, 0] - a[0, 0] * a[1, 2]) * inv
    out[2, 2] = (a[0, 0] * a[1, 1] - a[0, 1] * a[1, 0]) * inv


@nb.njit(**JIT)
def _mul(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    for i in range(3):
        for j in range(3):
            out[i, j] = a[i, 0] * b[0, j] + a[i, 1] * b[1, j] + a[i, 2] * b[2, j]


@nb.njit(**JIT)
def _mulv(a: np.ndarray, x: np.ndarray, out: np.ndarray) -> None:
    for i in range(3):
        out[i] = a[i, 0] * x[0] + a[i, 1] * x[1] + a[i, 2] * x[2]


@nb.njit(**JIT)
def _rts(
    z: np.ndarray,
    r: np.ndarray,
    q_scale: np.ndarray,
    p0: np.ndarray,
    f: np.ndarray,
    q3: np.ndarray,
    state: np.ndarray,
    var: np.ndarray,
) -> None:
    """Filter and smooth every coordinate (column) of ``z`` on its own.

    Parameters
    ----------
    z : (T, n)
        Measurements (ignored where ``r`` is not finite).
    r : (T, n)
        Their variances.
    q_scale : (n,)
        ``sigma**2 dt**5``: the process noise is ``q_scale * Q3``.
    p0 : (n,)
        Diffuse starting variance of value, velocity and acceleration.
    f, q3 : (3, 3)
        The frame transition and unit process noise (:mod:`.model`).
    state : (T, n, 3) out
        Smoothed value, velocity and acceleration (frame units).
    var : (T, n) out
        Smoothed variance of the value.
    """
    t_n, n = z.shape
    xf = np.empty((t_n, 3))
    pf = np.empty((t_n, 3, 3))
    pp = np.empty((t_n, 3, 3))
    ft = f.T.copy()
    tmp = np.empty((3, 3))
    g = np.empty((3, 3))
    inv = np.empty((3, 3))
    d = np.empty(3)
    xpred = np.empty(3)
    x = np.empty(3)
    for i in range(n):
        x[:] = 0.0
        p = np.zeros((3, 3))
        for k in range(3):
            p[k, k] = p0[i]
        for k in range(3):  # start at the first measurement there is
            if np.isfinite(r[k, i]) and r[k, i] > 0.0:
                x[0] = z[k, i]
                break
        for t in range(t_n):
            if t:
                _mulv(f, x, xpred)
                x[:] = xpred
                _mul(f, p, tmp)
                _mul(tmp, ft, p)
                for a in range(3):
                    for b in range(3):
                        p[a, b] += q_scale[i] * q3[a, b]
            pp[t] = p
            ri = r[t, i]
            if np.isfinite(ri) and ri >= 0.0:
                s = p[0, 0] + ri
                if s > 0.0:
                    y = z[t, i] - x[0]
                    k0, k1, k2 = p[0, 0] / s, p[1, 0] / s, p[2, 0] / s
                    x[0] += k0 * y
                    x[1] += k1 * y
                    x[2] += k2 * y
                    r0, r1, r2 = p[0, 0], p[0, 1], p[0, 2]
                    for a in range(3):
                        ka = k0 if a == 0 else (k1 if a == 1 else k2)
                        p[a, 0] -= ka * r0
                        p[a, 1] -= ka * r1
                        p[a, 2] -= ka * r2
                    for a in range(3):
                        for b in range(a):
                            m = 0.5 * (p[a, b] + p[b, a])
                            p[a, b] = m
                            p[b, a] = m
            xf[t] = x
            pf[t] = p
        xs = xf[t_n - 1].copy()
        ps = pf[t_n - 1].copy()
        state[t_n - 1, i] = xs
        var[t_n - 1, i] = ps[0, 0]
        for t in range(t_n - 2, -1, -1):
            _inv3(pp[t + 1], inv)
            _mul(pf[t], ft, tmp)
            _mul(tmp, inv, g)  # gain G = P_f F^T P_pred^-1
            _mulv(f, xf[t], xpred)
            for a in range(3):
                d[a] = xs[a] - xpred[a]
            for a in range(3):
                xs[a] = xf[t, a] + g[a, 0] * d[0] + g[a, 1] * d[1] + g[a, 2] * d[2]
            for a in range(3):  # P_s = P_f + G (P_s' - P_pred) G^T
                for b in range(3):
                    tmp[a, b] = ps[a, b] - pp[t + 1, a, b]
            _mul(g, tmp, inv)
            for a in range(3):
                for b in range(3):
                    ps[a, b] = pf[t, a, b] + (
                        inv[a, 0] * g[b, 0] + inv[a, 1] * g[b, 1] + inv[a, 2] * g[b, 2]
                    )
            state[t, i] = xs
            var[t, i] = ps[0, 0]


def _log(q: np.ndarray) -> np.ndarray:
    """Rotation vectors of unit quaternions ``(..., 4)``, the shortest way round."""
    return quat_to_rotvec(np.where(q[..., :1] < 0, -q, q))


def smooth_coordinates(
    z: np.ndarray,
    quat: np.ndarray | None,
    variance: np.ndarray,
    sigma: np.ndarray,
    dt: float,
    wrap: np.ndarray,
    scale: np.ndarray,
) -> Smoothed:
    """Smooth the per-frame fits ``z`` under the constant-acceleration prior.

    Parameters
    ----------
    z : (T, n)
        Per-frame fitted coordinates (root-rotation slots ignored, see ``quat``).
    quat : (T, 4) or None
        Per-frame root orientations (free base), else None.
    variance : (T, n)
        Each coordinate's own variance in each frame (``inf`` or NaN: no measurement).
    sigma : (n,)
        Process-noise scale of each coordinate (physical units, :mod:`.model`).
    dt : float
        Frame interval (s).
    wrap : (n,) bool
        Coordinates to unwrap along time (unbounded hinges).
    scale : (n,)
        Typical size of each coordinate (for the diffuse start).

    Returns
    -------
    Smoothed
    """
    t, n = z.shape
    z = np.array(z, np.float64)
    if wrap.any():
        z[:, wrap] = np.unwrap(z[:, wrap], axis=0)
    theta = None
    if quat is not None:
        quat = np.asarray(quat, np.float64)
        steps = _log(quat_multiply(quat[1:], quat_conjugate(quat[:-1])))  # world-frame increments
        theta = np.concatenate([np.zeros((1, 3)), np.cumsum(steps, axis=0)])
        z[:, 3:6] = theta
    r = np.where(np.isfinite(variance), variance, np.inf)
    state = np.empty((t, n, 3))
    var = np.empty((t, n))
    q_scale = np.asarray(sigma, np.float64) ** 2 * dt**5
    p0 = (DIFFUSE * np.asarray(scale, np.float64)) ** 2
    _rts(np.ascontiguousarray(z), np.ascontiguousarray(r), q_scale, p0, _F3, _Q3, state, var)
    value = state[..., 0].copy()
    orientation = None
    if quat is not None:
        orientation = quat_multiply(rotvec_to_quat(value[:, 3:6] - theta), quat)
        orientation /= np.linalg.norm(orientation, axis=-1, keepdims=True)
        value[:, 3:6] = 0.0
    std = np.sqrt(np.maximum(var, 0.0))
    return Smoothed(value, orientation, state[..., 1], state[..., 2], std)
