"""The step and the pose update of :mod:`.frames` on :data:`~.lane_forward.LANES` frames.

The lane forms of :mod:`.pose`'s step application and :mod:`.forward`'s half-angle update,
as :mod:`.lane_forward` describes: the same expressions in the same order per lane.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from pipeline.solve.compiled.compilers import NOALIAS_JIT
from pipeline.solve.compiled.forward import TAYLOR_HALF_STEP
from pipeline.solve.compiled.so3 import rotvec_times
from pipeline.solve.compiled.tables import Tables
from pipeline.solve.rules import BALL_SLACK_ULPS

_S3, _S5, _S7 = 1.0 / 6.0, 1.0 / 20.0, 1.0 / 42.0
_C4, _C6, _C8 = 1.0 / 12.0, 1.0 / 30.0, 1.0 / 56.0
_EPS_TOL = BALL_SLACK_ULPS * np.finfo(np.float64).eps

__all__ = ["advance_half_lanes", "apply_step_lanes"]


@nb.njit(**NOALIAS_JIT)
def apply_step_lanes(
    tb: Tables,
    q: np.ndarray,
    rp: np.ndarray,
    rq: np.ndarray,
    step: np.ndarray,
    q_new: np.ndarray,
    rp_new: np.ndarray,
    rq_new: np.ndarray,
    active: np.ndarray,
    max_pos: np.ndarray,
    max_ang: np.ndarray,
    finite: np.ndarray,
) -> None:
    """:func:`.pose.apply_step` of every lane; its three results into ``(L,)`` arrays.

    ``q``, ``q_new``, ``active`` are ``(N, L)``, ``rp`` ``(3, L)``, ``rq`` ``(4, L)``,
    ``step`` ``(n_state, L)``.
    ``active`` holds the lanes' coordinates held at a limit on entry
    (:func:`.lane_normal.damp_lanes`' ``bound``) and adds those the clamp moves.
    """
    nl = q.shape[1]
    lower, upper, angular, cone, swing1 = tb.lower, tb.upper, tb.angular, tb.cone, tb.swing1
    nr = tb.n_root
    n = q.shape[0]
    for k in range(n):
        lo, hi = lower[k], upper[k]
        for ln in range(nl):
            v = q[k, ln] + step[nr + k, ln]
            c = min(max(v, lo), hi)
            active[k, ln] = active[k, ln] or c != v
            q_new[k, ln] = c
    for k in swing1:
        for ln in range(nl):
            s1, s2 = q_new[k, ln], q_new[k + 1, ln]
            theta = math.sqrt(s1 * s1 + s2 * s2)
            if theta > math.pi:
                f = (theta - 2.0 * math.pi) / theta
                s1, s2 = s1 * f, s2 * f
            e = (s1 / cone[k, 0]) ** 2 + (s2 / cone[k, 1]) ** 2
            if e > 1.0 + _EPS_TOL:
                rr = math.sqrt(e)
                s1, s2 = s1 / rr, s2 / rr
                active[k, ln] = True
                active[k + 1, ln] = True
            q_new[k, ln], q_new[k + 1, ln] = s1, s2
    for ln in range(nl):
        max_pos[ln] = 0.0
        max_ang[ln] = 0.0
        finite[ln] = True
    for k in range(n):
        ang = angular[k]
        for ln in range(nl):
            d = abs(q_new[k, ln] - q[k, ln])
            finite[ln] = finite[ln] and math.isfinite(q_new[k, ln])
            if ang:
                max_ang[ln] = max(max_ang[ln], d)
            else:
                max_pos[ln] = max(max_pos[ln], d)
    if nr:
        for ln in range(nl):
            mp = max_pos[ln]
            fin = finite[ln]
            for i in range(3):
                rp_new[i, ln] = rp[i, ln] + step[i, ln]
                mp = max(mp, abs(step[i, ln]))
                fin = fin and math.isfinite(rp_new[i, ln])
            v0, v1, v2 = step[3, ln], step[4, ln], step[5, ln]
            max_ang[ln] = max(max_ang[ln], math.sqrt(v0**2 + v1**2 + v2**2))
            rq_new[0, ln], rq_new[1, ln], rq_new[2, ln], rq_new[3, ln] = rotvec_times(
                v0, v1, v2, rq[0, ln], rq[1, ln], rq[2, ln], rq[3, ln]
            )
            for i in range(4):
                fin = fin and math.isfinite(rq_new[i, ln])
            max_pos[ln] = mp
            finite[ln] = fin
    else:
        for ln in range(nl):
            for i in range(3):
                rp_new[i, ln] = rp[i, ln]
            for i in range(4):
                rq_new[i, ln] = rq[i, ln]


@nb.njit(**NOALIAS_JIT)
def advance_half_lanes(
    q: np.ndarray, q_new: np.ndarray, half: np.ndarray, half_new: np.ndarray
) -> None:
    """:func:`.forward.advance_half_angles` of every lane (``half`` ``(2, N, L)``).

    The Taylor series runs on every entry without a branch (vectorized); the entries whose
    half-step is beyond :data:`~.forward.TAYLOR_HALF_STEP` are then redone by the library,
    as the scalar code does them.
    """
    nl = q.shape[1]
    n = q.shape[0]
    for k in range(n):
        for ln in range(nl):
            d = 0.5 * (q_new[k, ln] - q[k, ln])
            d2 = d * d
            sd = d * (1.0 - d2 * _S3 * (1.0 - d2 * _S5 * (1.0 - d2 * _S7)))
            cd = 1.0 - d2 * 0.5 * (1.0 - d2 * _C4 * (1.0 - d2 * _C6 * (1.0 - d2 * _C8)))
            c, s = half[0, k, ln], half[1, k, ln]
            half_new[0, k, ln] = c * cd - s * sd
            half_new[1, k, ln] = s * cd + c * sd
    for k in range(n):
        for ln in range(nl):
            if not abs(0.5 * (q_new[k, ln] - q[k, ln])) <= TAYLOR_HALF_STEP:
                half_new[0, k, ln] = math.cos(0.5 * q_new[k, ln])
                half_new[1, k, ln] = math.sin(0.5 * q_new[k, ln])
