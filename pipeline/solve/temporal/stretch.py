"""Where a coordinate's smoothing starts, and what it reports before its first measurement.

A diffuse start (a huge variance on the first frame's value, velocity and acceleration)
leaves the filter's covariance ill-conditioned over the first frames: with variances of
``1e6`` against measurement variances of ``1e-5`` the smoother's gains lose most of their
digits and the first frames' velocities come out hundreds of rad/s off. Instead every
*stretch* of a coordinate (its measured frames, cut where it goes unmeasured so long that
bridging would carry nothing) starts from its own data:

- :func:`start_state`: the quadratic through the stretch's first three measurements (value,
  velocity and acceleration at the first) with its covariance, the measurements' variances
  and the process noise between them carried through; the filter takes it with
  :data:`START_INFLATION` times that covariance, so the three frames, which it then reads
  again as measurements, are counted 1 % more than they weigh;
- :func:`extrapolate_back`: frames before a stretch's first measurement (a session that
  starts unobserved, the second half of a cut gap) get the motion model run backwards from
  the stretch's smoothed first state, with the variance it accrues.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from pipeline.solve.kernel_cache import stamp_package
from pipeline.solve.rules import JIT
from pipeline.solve.temporal.matrix3 import inv3, mul3, mul3t, mulv3

# before the kernels below are decorated: their cache is stamped with this package's sources
stamp_package("pipeline.solve.temporal")

__all__ = ["GAP_SPREAD", "START_INFLATION", "extrapolate_back", "gap_frames", "start_state"]

#: The start's covariance over the one its three measurements give: their information
#: is counted ``1 + 1 / START_INFLATION`` times (they are read again by the filter).
START_INFLATION = 100.0
#: A coordinate's stretch ends at a gap over which the motion model alone spreads the
#: value by this many of the coordinate's scales (SD): past it, bridging tells nothing.
GAP_SPREAD = 1.0


def gap_frames(q_scale: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Unmeasured frames that end a stretch: the process noise spreads the value there.

    Parameters
    ----------
    q_scale : (n,)
        ``sigma**2 dt**5`` of each coordinate (frame units, :mod:`.model`).
    scale : (n,)
        Each coordinate's scale (1 for angles, the length scale for positions).

    Returns
    -------
    (n,) float
        ``L`` with ``q_scale L**5 / 20 = (GAP_SPREAD scale)**2``: the white jerk's value
        variance after ``L`` frames from a known state.
    """
    return (20.0 * (GAP_SPREAD * scale) ** 2 / q_scale) ** 0.2


@nb.njit(**JIT)
def start_state(
    z: np.ndarray,
    r: np.ndarray,
    i: int,
    frames: np.ndarray,
    q: float,
    floor: float,
    x: np.ndarray,
    p: np.ndarray,
) -> None:
    """State at ``frames[0]`` from the quadratic through column ``i``'s three measurements.

    Parameters
    ----------
    z, r : (T, n)
        Measurements and their variances.
    i : int
        The column.
    frames : (3,) int
        Increasing measured frames ``a < b < c``.
    q : float
        ``sigma**2 dt**5`` of the column (frame units).
    floor : float
        Added to the covariance's diagonal (keeps it invertible with exact data).
    x : (3,) out
        Value, velocity and acceleration (frame units) at ``a``.
    p : (3, 3) out
        Their covariance, times :data:`START_INFLATION`.
    """
    a, b, c = frames[0], frames[1], frames[2]
    db, dc = float(b - a), float(c - a)
    step = dc - db
    basis = np.zeros((3, 3))  # z_k = value + velocity d_k + acceleration d_k^2 / 2
    basis[:, 0] = 1.0
    basis[1, 1], basis[1, 2] = db, 0.5 * db * db
    basis[2, 1], basis[2, 2] = dc, 0.5 * dc * dc
    solve = np.empty((3, 3))
    inv3(basis, solve)
    y = np.empty(3)
    y[0], y[1], y[2] = z[a, i], z[b, i], z[c, i]
    mulv3(solve, y, x)
    cov = np.zeros((3, 3))  # of the three measurements: noise, and the jerk since a
    cov[0, 0] = r[a, i]
    cov[1, 1] = r[b, i] + q * db**5 / 20.0
    cov[2, 2] = r[c, i] + q * dc**5 / 20.0
    cross = q * (db**5 / 20.0 + db**4 / 8.0 * step + db**3 / 12.0 * step * step)
    cov[1, 2], cov[2, 1] = cross, cross
    tmp = np.empty((3, 3))
    mul3(solve, cov, tmp)
    mul3t(tmp, solve, p)
    for u in range(3):
        for v in range(3):
            p[u, v] *= START_INFLATION
        p[u, u] += floor


@nb.njit(**JIT)
def extrapolate_back(
    x: np.ndarray,
    p: np.ndarray,
    f_inv: np.ndarray,
    q: float,
    q3: np.ndarray,
    i: int,
    lo: int,
    a: int,
    state: np.ndarray,
    var: np.ndarray,
) -> None:
    """Frames ``lo .. a-1`` of column ``i`` from the smoothed state at ``a``, backwards.

    ``x_t = F^-1 x_(t+1)`` and ``P_t = F^-1 (P_(t+1) + q Q3) F^-T``: the motion model run
    backwards, the jerk between the frames added (exact for a flat prior on ``x_t``).

    Parameters
    ----------
    x : (3,), p : (3, 3)
        The smoothed state and covariance at ``a`` (overwritten).
    f_inv, q3 : (3, 3)
        The inverse frame transition and unit process noise (:mod:`.model`).
    q : float
        ``sigma**2 dt**5`` of the column.
    i, lo, a : int
        The column and the frames to fill.
    state : (T, n, 3) out, var : (T, n) out
    """
    tmp = np.empty((3, 3))
    tmp2 = np.empty((3, 3))
    xn = np.empty(3)
    for t in range(a - 1, lo - 1, -1):
        for u in range(3):
            for v in range(3):
                tmp[u, v] = p[u, v] + q * q3[u, v]
        mul3(f_inv, tmp, tmp2)
        mul3t(tmp2, f_inv, p)
        mulv3(f_inv, x, xn)
        x[:] = xn
        state[t, i] = x
        var[t, i] = p[0, 0]
