"""Per-coordinate forward filter and RTS smoother of the frames' own fits (compiled).

``temporal="smooth"`` combines every frame's own fit with the constant-acceleration prior
of :mod:`.model`. Each frame's fit is a measurement of every coordinate with its own
marginal variance, the frame's ``temporal="none"`` uncertainty (the diagonal of
``s2 (J^T W J + P)^-1``, :mod:`.uncertainty`; computed in the compiled kernel); each
coordinate is then smoothed on its own, a three-state (value, velocity, acceleration)
Kalman filter forward and a Rauch-Tung-Striebel pass backward. A frame where a coordinate
is held only by the prior (a gap) has a large variance there, so the motion model bridges
it and the posterior variance grows through the gap. Each coordinate's process-noise scale
is estimated from its own fits around the configured one (:mod:`.noise_fit`).

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
from pipeline.solve.temporal.matrix3 import inv3, mul3, mul3t, mulv3
from pipeline.solve.temporal.motion_model import _F3, _Q3
from pipeline.solve.temporal.noise_fit import fit_noise
from pipeline.solve.temporal.stretch import extrapolate_back, gap_frames, start_state

# before the kernels below are decorated: their cache is stamped with this package's
# sources and the modules they import (the rules' constants, the model's matrices)
stamp_package("pipeline.solve.temporal")

__all__ = ["DIFFUSE", "FLOOR", "NONLINEAR_BIAS", "Smoothed", "smooth_coordinates"]

#: Diffuse start of a coordinate with fewer than three measurements: standard deviation
#: of its value, velocity and acceleration, in units of its scale per frame.
DIFFUSE = 1e3
#: Variance added to a data-derived start's diagonal, in squared units of the scale.
FLOOR = 1e-18
#: Bias of a frame's own fit of an angle per squared radian of its SD: a least-squares
#: fit of ``theta`` through keypoints that move on circles, ``f(theta)``, is biased by
#: ``-s**2 f'' / (2 f')`` at SD ``s``, about ``s**2 / 2`` for a rotation (``f''/f'`` of
#: order one per radian). It follows the pose, so averaging frames does not remove it:
#: the smoothed SD of an angle keeps it (measured on the fly and the mannequin at 1 %
#: keypoint noise: coverage of 1.96 SD 0.89 / 0.93 without, 0.93 / 0.96 with).
NONLINEAR_BIAS = 0.5
_F3_INV = np.linalg.inv(_F3)


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
def _stretch(z, r, i, a, hi, x, p, q, f, ft, q3, xf, pf, pp, state, var) -> None:
    """Filter frames ``a .. hi-1`` of column ``i`` from ``(x, p)`` at ``a``, then smooth.

    ``xf, pf, pp`` (T, 3[, 3]) are workspace (filtered state, its covariance, predicted
    covariance); on return ``(x, p)`` hold the smoothed state and covariance at ``a``.
    """
    tmp = np.empty((3, 3))
    g = np.empty((3, 3))
    inv = np.empty((3, 3))
    d = np.empty(3)
    xpred = np.empty(3)
    for t in range(a, hi):
        if t > a:
            mulv3(f, x, xpred)
            x[:] = xpred
            mul3(f, p, tmp)
            mul3(tmp, ft, p)
            for u in range(3):
                for v in range(3):
                    p[u, v] += q * q3[u, v]
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
                for u in range(3):
                    ku = k0 if u == 0 else (k1 if u == 1 else k2)
                    p[u, 0] -= ku * r0
                    p[u, 1] -= ku * r1
                    p[u, 2] -= ku * r2
                for u in range(3):
                    for v in range(u):
                        m = 0.5 * (p[u, v] + p[v, u])
                        p[u, v] = m
                        p[v, u] = m
        xf[t] = x
        pf[t] = p
    state[hi - 1, i] = x  # the last frame: smoothed = filtered
    var[hi - 1, i] = p[0, 0]
    for t in range(hi - 2, a - 1, -1):
        inv3(pp[t + 1], inv)
        mul3(pf[t], ft, tmp)
        mul3(tmp, inv, g)  # gain G = P_f F^T P_pred^-1
        mulv3(f, xf[t], xpred)
        for u in range(3):
            d[u] = x[u] - xpred[u]
        for u in range(3):
            x[u] = xf[t, u] + g[u, 0] * d[0] + g[u, 1] * d[1] + g[u, 2] * d[2]
        for u in range(3):  # P_s = P_f + G (P_s' - P_pred) G^T
            for v in range(3):
                tmp[u, v] = p[u, v] - pp[t + 1, u, v]
        mul3(g, tmp, inv)
        mul3t(inv, g, tmp)
        for u in range(3):
            for v in range(3):
                p[u, v] = pf[t, u, v] + tmp[u, v]
        state[t, i] = x
        var[t, i] = p[0, 0]


@nb.njit(**JIT)
def _rts(z, r, q_scale, p0, gap, floor, f, f_inv, q3, state, var) -> None:
    """Filter and smooth every coordinate (column) of ``z`` on its own.

    Each column is cut into stretches at gaps of more than ``gap`` unmeasured frames
    (each stretch keeping at least three measurements); a stretch starts from its first
    three measurements (:func:`.stretch.start_state`) and reports the frames up to the
    middle of the gap after it; the frames before its first measurement are extrapolated
    back (:func:`.stretch.extrapolate_back`). A column with fewer than three
    measurements starts diffuse at its first one.

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
    gap : (n,)
        Unmeasured frames that end a stretch (:func:`.stretch.gap_frames`).
    floor : (n,)
        Variance added to a data-derived start's diagonal.
    f, f_inv, q3 : (3, 3)
        The frame transition, its inverse and the unit process noise (:mod:`.model`).
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
    x = np.empty(3)
    p = np.empty((3, 3))
    measured = np.empty(t_n, np.int64)
    for i in range(n):
        m = 0
        for t in range(t_n):
            if np.isfinite(r[t, i]) and r[t, i] >= 0.0:
                measured[m] = t
                m += 1
        if m < 3:  # too few to start from: diffuse at the first measurement there is
            a = measured[0] if m else 0
            x[:] = 0.0
            x[0] = z[a, i] if m else 0.0
            p[:] = 0.0
            for k in range(3):
                p[k, k] = p0[i]
            _stretch(z, r, i, a, t_n, x, p, q_scale[i], f, ft, q3, xf, pf, pp, state, var)
            extrapolate_back(x, p, f_inv, q_scale[i], q3, i, 0, a, state, var)
            continue
        first, lo = 0, 0
        while True:
            j = first + 3  # the stretch holds measured[first:j], at least three
            while j < m and not (measured[j] - measured[j - 1] > gap[i] and m - j >= 3):
                j += 1
            hi = t_n if j >= m else (measured[j - 1] + measured[j] + 1) // 2
            a = measured[first]
            start_state(z, r, i, measured[first : first + 3], q_scale[i], floor[i], x, p)
            _stretch(z, r, i, a, hi, x, p, q_scale[i], f, ft, q3, xf, pf, pp, state, var)
            extrapolate_back(x, p, f_inv, q_scale[i], q3, i, lo, a, state, var)
            if j >= m:
                break
            first, lo = j, hi


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
    angular: np.ndarray | None = None,
    fit: bool = False,
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
        Typical size of each coordinate (1 for angles; for the start and its gaps).
    angular : (n,) bool, optional
        Angles (root rotation, hinges): their SD keeps each frame's second-order bias
        ``NONLINEAR_BIAS min(s, 1)**2`` (``s`` the frame's own SD, rad). None: no angles.
    fit : bool
        Estimate each coordinate's process-noise scale from its fits within a few times
        ``sigma`` (:func:`.noise_fit.fit_noise`), else use ``sigma`` as given.

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
    scale = np.asarray(scale, np.float64)
    floor = FLOOR * scale**2
    z, r = np.ascontiguousarray(z), np.ascontiguousarray(r)
    if fit:
        sigma = fit_noise(z, r, sigma, dt, floor, _F3, _Q3)
    q_scale = np.asarray(sigma, np.float64) ** 2 * dt**5
    p0, gap = (DIFFUSE * scale) ** 2, gap_frames(q_scale, scale)
    _rts(z, r, q_scale, p0, gap, floor, _F3, _F3_INV, _Q3, state, var)
    if angular is not None and np.any(angular):
        own = np.minimum(np.where(np.isfinite(r), r, 0.0)[:, angular], 1.0)  # s**2, rad^2
        var[:, angular] += (NONLINEAR_BIAS * own) ** 2
    value = state[..., 0].copy()
    orientation = None
    if quat is not None:
        orientation = quat_multiply(rotvec_to_quat(value[:, 3:6] - theta), quat)
        orientation /= np.linalg.norm(orientation, axis=-1, keepdims=True)
        value[:, 3:6] = 0.0
    std = np.sqrt(np.maximum(var, 0.0))
    return Smoothed(value, orientation, state[..., 1], state[..., 2], std)
