"""Each coordinate's process-noise scale, estimated from its own fits by maximum likelihood.

One process-noise scale for every angle (``SolverConfig.temporal_noise``) smooths a
coordinate that moves slowly as little as one that moves fast: the slow one keeps noise
the motion model could have averaged away, the fast one lags. The frames' own fits tell
the two apart: under the white-jerk model of :mod:`.motion_model` with the frames'
measurement variances, the forward filter's innovations ``y_t`` (measurement minus
prediction, variance ``s_t``) give the log-likelihood ``-1/2 sum(log s_t + y_t**2 / s_t)``
of the scale. :func:`fit_noise` evaluates it for every coordinate at the configured scale
times each of :data:`FACTORS` and keeps the best. The grid spans a factor of
``FACTORS[-1] / FACTORS[0]`` around the configured scale only: the motion of a body is
not white jerk, and left free the estimate runs off to scales that smooth the motion
away (measured on the mannequin at 1 % keypoint noise: without a lower bound several
coordinates take 1/16 of the scale, and the coverage of the smoothed SD drops to 0.91).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from pipeline.solve.kernel_cache import stamp_package
from pipeline.solve.rules import JIT
from pipeline.solve.temporal.matrix3 import mul3, mulv3
from pipeline.solve.temporal.stretch import start_state

# before the kernel below is decorated: its cache is stamped with this package's sources
stamp_package("pipeline.solve.temporal")

__all__ = ["FACTORS", "fit_noise", "log_likelihood"]

#: Multiples of the configured process-noise scale the estimate chooses from.
FACTORS = 2.0 ** np.arange(-2.0, 2.01, 0.5)


@nb.njit(**JIT)
def log_likelihood(z, r, q_scale, floor, f, ft, q3, out) -> None:
    """Innovation log-likelihood of every column of ``z`` (its first three frames left out).

    Parameters
    ----------
    z, r : (T, n)
        Measurements and their variances (``inf``: unmeasured).
    q_scale : (n,)
        ``sigma**2 dt**5`` of each column (frame units).
    floor : (n,)
        Variance added to the start's diagonal (:func:`.stretch.start_state`).
    f, ft, q3 : (3, 3)
        The frame transition, its transpose and the unit process noise.
    out : (n,) out
        The log-likelihood (0 for a column with fewer than four measurements).
    """
    t_n, n = z.shape
    measured = np.empty(t_n, np.int64)
    x = np.empty(3)
    p = np.empty((3, 3))
    tmp = np.empty((3, 3))
    xpred = np.empty(3)
    for i in range(n):
        m = 0
        for t in range(t_n):
            if np.isfinite(r[t, i]) and r[t, i] >= 0.0:
                measured[m] = t
                m += 1
        out[i] = 0.0
        if m < 4:
            continue
        a = measured[0]
        start_state(z, r, i, measured[:3], q_scale[i], floor[i], x, p)
        seen = 0
        for t in range(a, t_n):
            if t > a:
                mulv3(f, x, xpred)
                x[:] = xpred
                mul3(f, p, tmp)
                mul3(tmp, ft, p)
                for u in range(3):
                    for v in range(3):
                        p[u, v] += q_scale[i] * q3[u, v]
            ri = r[t, i]
            if not (np.isfinite(ri) and ri >= 0.0):
                continue
            s = p[0, 0] + ri
            if s <= 0.0:
                continue
            y = z[t, i] - x[0]
            seen += 1
            if seen > 3:
                out[i] -= 0.5 * (np.log(s) + y * y / s)
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
                    mean = 0.5 * (p[u, v] + p[v, u])
                    p[u, v] = mean
                    p[v, u] = mean


def fit_noise(
    z: np.ndarray,
    r: np.ndarray,
    sigma: np.ndarray,
    dt: float,
    floor: np.ndarray,
    f: np.ndarray,
    q3: np.ndarray,
) -> np.ndarray:
    """The maximum-likelihood process-noise scale of every column, on :data:`FACTORS`.

    Parameters
    ----------
    z, r : (T, n)
        Measurements (unwrapped, root rotation accumulated) and their variances.
    sigma : (n,)
        Configured process-noise scale of each column (physical units).
    dt : float
        Frame interval (s).
    floor : (n,)
        Variance added to the start's diagonal.
    f, q3 : (3, 3)
        The frame transition and the unit process noise.

    Returns
    -------
    (n,) array
        ``sigma`` times each column's best factor (the configured scale where a column
        has too few measurements to tell).
    """
    sigma = np.asarray(sigma, np.float64)
    ft = f.T.copy()
    ll = np.empty((FACTORS.size, sigma.size))
    for k, factor in enumerate(FACTORS):
        q_scale = (factor * sigma) ** 2 * dt**5
        log_likelihood(z, r, q_scale, floor, f, ft, q3, ll[k])
    best = FACTORS[np.argmax(ll, axis=0)]
    best[np.all(ll == 0.0, axis=0)] = 1.0
    return sigma * best
