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

import math
from typing import NamedTuple

import numpy as np
import scipy.linalg

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


def _qmul(a, b) -> tuple[float, float, float, float]:
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return (
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    )


def _log_delta(qa, qb) -> np.ndarray:
    """World-frame rotation vector from ``qb`` to ``qa``: ``log(qa qb^-1)``."""
    w, x, y, z = _qmul(qa, (qb[0], -qb[1], -qb[2], -qb[3]))
    if w < 0:
        w, x, y, z = -w, -x, -y, -z
    s = math.sqrt(x * x + y * y + z * z)
    k = 2.0 / w if s < 1e-8 else 2.0 * math.atan2(s, w) / s
    return np.array([k * x, k * y, k * z])


def _rotate(delta, q) -> np.ndarray:
    """``exp(delta) q``, normalised."""
    dx, dy, dz = float(delta[0]), float(delta[1]), float(delta[2])
    theta = math.sqrt(dx * dx + dy * dy + dz * dz)
    k = 0.5 - theta * theta / 48.0 if theta < 1e-8 else math.sin(0.5 * theta) / theta
    r = np.array(_qmul((math.cos(0.5 * theta), k * dx, k * dy, k * dz), q))
    return r / math.sqrt(float(r @ r))


def _solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a^-1 b`` for a symmetric ``a``: Cholesky, LU where rounding made it indefinite."""
    try:
        return scipy.linalg.cho_solve(scipy.linalg.cho_factor(a, check_finite=False), b)
    except np.linalg.LinAlgError:
        return np.linalg.solve(a, b)


def _rows(p: np.ndarray, n: int) -> np.ndarray:
    """``F p`` by blocks (``F = kron(F3, I)``), shape ``(3, n, 3, n)``."""
    b = p.reshape(3, n, 3, n)
    return np.stack([b[0] + b[1] + 0.5 * b[2], b[1] + b[2], b[2]])


def _predict(p: np.ndarray, q: np.ndarray, n: int) -> np.ndarray:
    """``F p F^T + Q`` by blocks: no dense products."""
    rows = _rows(p, n)
    out = np.stack(
        [
            rows[:, :, 0] + rows[:, :, 1] + 0.5 * rows[:, :, 2],
            rows[:, :, 1] + rows[:, :, 2],
            rows[:, :, 2],
        ],
        axis=2,
    )
    return out.reshape(3 * n, 3 * n) + q


def rts_smooth(
    z: np.ndarray,
    quat: np.ndarray | None,
    information: np.ndarray,
    gradient: np.ndarray,
    sigma: np.ndarray,
    dt: float,
    wrap: np.ndarray,
    scale: np.ndarray,
    covariance: bool = True,
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
    covariance : bool
        Smooth the covariance too (False: ``std`` is the filter's, a re-linearisation
        pass needs the means only).

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
            pp = _predict(p, q, n)
            gain[k - 1] = _solve(pp, _rows(p, n).reshape(3 * n, 3 * n)).T
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
        if covariance:
            ps = p_f[k] + g @ (ps - _predict(p_f[k], q, n)) @ g.T
        if rot:
            quat_s[k] = _rotate(xs[rot], q_filt[k])
            xs[rot] = 0.0
        out[k], var[k] = xs, np.diagonal(ps)[:n]
    std = np.sqrt(np.maximum(var, 0.0))
    return Smoothed(out[:, :n], quat_s, out[:, n : 2 * n], out[:, 2 * n :], std)
