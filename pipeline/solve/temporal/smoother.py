"""Forward Kalman filter and backward Rauch-Tung-Striebel smoother in coordinate space.

The coordinates are ``[root position (3), root rotation (3), DOFs (N)]`` (no root for a
fixed base), each with the constant-acceleration motion model of
:mod:`pipeline.solve.temporal.model`. Each frame is one measurement: its own fitted pose
``z_t`` with information ``H_t`` (:mod:`pipeline.solve.temporal.uncertainty`), i.e. the
Laplace approximation of the frame's keypoint likelihood at its optimum. A missing
keypoint contributes nothing to ``H_t``, so a gap is bridged by the motion model and the
posterior variance grows through it.

The root rotation is an error state (a multiplicative filter): the state carries a
nominal orientation and a world-frame rotation increment, velocity and acceleration;
differences of orientations are ``log(q_a q_b^-1)``, so no reference orientation is
needed and any heading works. Unbounded hinge angles, which the per-frame solver wraps
into ``neutral +- pi``, have their innovations wrapped into ``[-pi, pi]``.

The measurement update uses the information form ``K = P_xz (I + H P_zz)^-1 H``, valid for a
singular ``H`` (an unobserved coordinate).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from pipeline.kinematics.rotations import (
    quat_conjugate,
    quat_multiply,
    quat_normalize,
    quat_to_rotvec,
    rotvec_to_quat,
)
from pipeline.solve.temporal.model import transition

__all__ = ["Smoothed", "rts_smooth"]

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


def _log_delta(qa: np.ndarray, qb: np.ndarray) -> np.ndarray:
    """World-frame rotation vector from ``qb`` to ``qa``: ``log(qa qb^-1)``."""
    d = quat_multiply(qa, quat_conjugate(qb))
    return quat_to_rotvec(np.where(d[..., :1] < 0, -d, d))


def _rotate(delta: np.ndarray, q: np.ndarray) -> np.ndarray:
    return quat_normalize(quat_multiply(rotvec_to_quat(delta), q))


def rts_smooth(
    z: np.ndarray,
    quat: np.ndarray | None,
    information: np.ndarray,
    gradient: np.ndarray,
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
    information : (T, n, n)
        Measurement information of each frame (per coordinate unit squared).
    gradient : (T, n)
        Information times the Gauss-Newton step from ``z``: the frame's measurement is
        ``z + information^-1 gradient`` (``z`` need not be the frame's optimum).
    sigma : (n,)
        Process-noise scale of each coordinate (physical units).
    dt : float
        Frame interval (s).
    wrap : (n,) bool
        Coordinates whose innovations wrap into ``[-pi, pi]``.
    scale : (n,)
        Typical size of each coordinate (for the diffuse start).

    Returns
    -------
    Smoothed
    """
    t, n = z.shape
    rot = slice(3, 6) if quat is not None else None
    f, q = transition(sigma, dt)
    eye = np.eye(n)
    x_f = np.zeros((t, 3 * n))
    p_f = np.zeros((t, 3 * n, 3 * n))
    gain = np.zeros((t, 3 * n, 3 * n))
    dx = np.zeros((t, 3 * n))  # x_pred(t+1) - F x_f(t) is 0; keep predicted means here
    q_pred = np.zeros((t, 4)) if rot else None
    q_filt = np.zeros((t, 4)) if rot else None
    x = np.zeros(3 * n)
    x[:n] = z[0]
    p = np.diag(np.tile(DIFFUSE * scale, 3) ** 2)
    qn = quat[0] if rot else None
    for k in range(t):
        if k:
            pp = f @ p @ f.T + q
            gain[k - 1] = np.linalg.solve(pp, f @ p).T
            x = f @ x
            if rot:
                qn = _rotate(x[rot], qn)
                x[rot] = 0.0
            p = pp
        dx[k] = x
        if rot:
            q_pred[k] = qn
        y = z[k] - x[:n]
        if rot:
            y[rot] = _log_delta(quat[k], qn)
        y = np.where(wrap, (y + np.pi) % (2 * np.pi) - np.pi, y)
        h = information[k]
        b = h @ y + gradient[k]
        m = np.linalg.solve(h @ p[:n, :n] + eye, np.concatenate([h, b[:, None]], axis=1))
        kg = p[:, :n] @ m[:, :n]
        x = x + p[:, :n] @ m[:, n]
        p = p - kg @ p[:n, :]
        p = 0.5 * (p + p.T)
        if rot:
            qn = _rotate(x[rot], qn)
            x[rot] = 0.0
            q_filt[k] = qn
        x_f[k], p_f[k] = x, p
    xs, ps = x_f[-1].copy(), p_f[-1].copy()
    out = np.zeros((t, 3 * n))
    var = np.zeros((t, n))
    out[-1], var[-1] = xs, np.diagonal(ps)[:n]
    quat_s = np.zeros((t, 4)) if rot else None
    if rot:
        quat_s[-1] = q_filt[-1]
    for k in range(t - 2, -1, -1):
        d = xs - dx[k + 1]
        if rot:
            d[rot] = _log_delta(quat_s[k + 1], q_pred[k + 1])
        g = gain[k]
        xs = x_f[k] + g @ d
        ps = p_f[k] + g @ (ps - (f @ p_f[k] @ f.T + q)) @ g.T
        if rot:
            quat_s[k] = _rotate(xs[rot], q_filt[k])
            xs[rot] = 0.0
        out[k], var[k] = xs, np.diagonal(ps)[:n]
    std = np.sqrt(np.maximum(var, 0.0))
    return Smoothed(out[:, :n], quat_s, out[:, n : 2 * n], out[:, 2 * n :], std)
