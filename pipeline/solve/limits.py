"""The **Step** rule's held coordinates: locked ones, and those at a limit for one step.

:mod:`pipeline.solve.rules` states the rule (its **Step**); both engines take a held
coordinate out of the step (``compiled/loop.py damp_system``, ``compiled/lane_normal.py``,
``numpy/normal.py solve_blocks``) with these functions.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from pipeline.solve.rules import INLINE, JIT

__all__ = ["at_limit", "held", "held_coordinates", "limits_held"]


@nb.njit(**INLINE)
def held(lower: float, upper: float) -> bool:
    """Whether a coordinate is held out of every step (:mod:`pipeline.solve.rules`' **Step** rule).

    Parameters
    ----------
    lower, upper : float
        The coordinate's limits.

    Returns
    -------
    bool
        True for a locked coordinate (``lower == upper``): its step is 0.
    """
    return lower == upper


@nb.njit(**INLINE)
def at_limit(q: float, lower: float, upper: float, descent: float) -> bool:
    """Whether a coordinate is held at a limit for one step (:mod:`pipeline.solve.rules`' **Step**).

    Parameters
    ----------
    q : float
        The coordinate's value (the clamp leaves it exactly on a limit).
    lower, upper : float
        Its limits (not equal: a locked coordinate is :func:`held` always).
    descent : float
        Its entry of the descent gradient ``J^T W r - prior (q - neutral)`` (minus half
        the objective's gradient).

    Returns
    -------
    bool
        True when ``q`` is on a limit and the objective falls out of the range.
    """
    return (q <= lower and descent < 0.0) or (q >= upper and descent > 0.0)


@nb.njit(**JIT)
def limits_held(
    q: np.ndarray, lower: np.ndarray, upper: np.ndarray, descent: np.ndarray
) -> np.ndarray:
    """:func:`at_limit` of every pose's coordinates (locked ones excluded: :func:`held`).

    Parameters
    ----------
    q, descent : (S, N)
        The poses and their descent gradients.
    lower, upper : (N,)
        The limits.

    Returns
    -------
    (S, N) bool
    """
    out = np.zeros(q.shape, np.bool_)
    for s in range(q.shape[0]):
        for k in range(q.shape[1]):
            lo, hi = float(lower[k]), float(upper[k])
            out[s, k] = not held(lo, hi) and at_limit(float(q[s, k]), lo, hi, float(descent[s, k]))
    return out


@nb.njit(**JIT)
def held_coordinates(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """:func:`held` of every coordinate.

    Parameters
    ----------
    lower, upper : (N,) float
        The coordinates' limits.

    Returns
    -------
    (N,) bool
    """
    out = np.empty(lower.shape[0], np.bool_)
    for k in range(lower.shape[0]):
        out[k] = held(float(lower[k]), float(upper[k]))
    return out
