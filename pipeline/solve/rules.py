"""The rules both solver engines follow, stated once.

The numpy engine (:mod:`pipeline.solve.numpy`, frames in lockstep lanes of numpy calls)
and the compiled engine (:mod:`pipeline.solve.compiled`, numba loops one frame at a time)
implement the same algorithm in two styles; every constant and code they share lives
here, and each rule names its implementations:

- **Objective**: ``sum_i w_i rho(|r_i|^2) + neutral_weight * sum_k scaler_k (q_k -
  neutral_k)^2``, ``rho`` the robust loss of :data:`LOSS_CODES` (``numpy/forward.py
  evaluate``, ``compiled/forward.py objective``).
- **Step**: the damped Gauss-Newton step, relative damping ``lam * max(A_ii, 1)`` added
  after the prior (``numpy/normal.py solve_blocks``, ``compiled/loop.py damp_system``); a
  system that cannot be factored gives a zero step. A *held* coordinate (locked,
  ``lower == upper``, as OpenSim's locked coordinates import) is taken out of the system,
  its row and column replaced by the identity and its gradient by 0, so its step is 0
  and the others take the Gauss-Newton step of the remaining coordinates
  (``numpy/normal.py solve_blocks``). Left in, the step would move it and the clamp take
  the move back, and what remains of the step is no descent direction: on a 37-DOF
  OpenSim model with 8 locked coordinates LM then rejects every other step.
  A coordinate *at a limit* whose gradient points out of its range (``q <= lower`` with
  the descent gradient below 0, or ``q >= upper`` above 0) is held
  the same way for that step, the active set of a projected Gauss-Newton step
  (``numpy/normal.py solve_blocks``, ``compiled/loop.py damp_system``), and counts as
  limit-active. Left in, the step spends itself on the coordinate the clamp then holds
  and the others creep: on Pose2Sim's demo (subtalar at its limit) Gauss-Newton stopped
  at an objective 8 % above the optimum, and LM took 100-350 iterations on a fifth of
  the frames. Both tests are :mod:`pipeline.solve.limits`' (``held``, ``at_limit``).
- **Accept** (:func:`accepts`): ``gn`` takes every finite step, ``lm`` a finite step that
  does not raise the objective.
- **Damping** (:func:`next_damping`): starts at :func:`initial_damping`; in ``lm`` mode an
  accepted step multiplies it by :data:`LM_SHRINK` (floored at ``SolverConfig.damping``), a
  rejected one by :data:`LM_GROW`.
- **Stop** (:func:`stop_reason`, codes :data:`STOP_REASONS`): a frame has *converged* when
  its applied update is
  under both tolerances (:func:`small_update`, which with ``tolerance_on="distance"``
  bounds the distance left estimated from the update's rate instead; ``gn``: every step;
  ``lm``: an accepted step), when an accepted
  LM step lowers the objective by at most ``cost_tolerance`` relative, or when an LM step
  changes it by at most :data:`FLAT_RTOL` relative (a stationary point in the working
  precision); it has *stalled* when the LM damping passes :data:`LM_MAX_DAMPING` (no
  step lowers the objective) or when its objective or pose is not finite on the last
  step (it then keeps its pose and never stops early); otherwise it stops at the
  iteration cap (*max_iterations*). A frame with no observed keypoint reports
  *no_observations* whatever the loop did (its pose is the prior's: neutral).

The accept, damping and stop rules are written once, here, as numba functions: the
compiled kernels (``compiled/frames.py``, ``compiled/projection.py``) inline them, and the
numpy engine (``numpy/frames.py``) applies them to all its lanes at once through
:func:`lane_rules`, the same functions compiled over a loop. Their arithmetic is float64
in both engines.
- **Clamp**: box limits clip; a ball's swing wraps to at most pi then projects radially
  onto its cone, with :data:`BALL_SLACK_ULPS` of slack so that the projection is idempotent
  (``numpy/pose.py clamp``, ``compiled/pose.py clamp_into``).
- **Kabsch start**: a free root cold-starts at the rigid fit of the neutral keypoints to
  the observed ones; fewer than :data:`KABSCH_MIN_KEYPOINTS` observed keypoints, or a
  second singular value under :data:`KABSCH_RANK_RTOL` of the first, keep the identity
  rotation and match centroids (``numpy/pose.py kabsch_start``, ``compiled/pose.py
  kabsch_start``).
- **Diagnostics**: residual = distance of an observed keypoint from its target (NaN
  where missing), RMS and largest over the observed ones, 0 when none is observed
  (``numpy/pose.py diagnostics``, ``compiled/pose.py diagnostics``).

:data:`JIT` and :data:`INLINE` are the numba options of every compiled kernel.
"""

from __future__ import annotations

import math
import typing
from types import MappingProxyType
from typing import Literal

import numba as nb
import numpy as np

__all__ = [
    "BALL_SLACK_ULPS",
    "CAUCHY",
    "FLAT_FLOOR",
    "FLAT_RTOL",
    "HUBER",
    "INLINE",
    "JIT",
    "KABSCH_MIN_KEYPOINTS",
    "KABSCH_RANK_RTOL",
    "L2",
    "LM_GROW",
    "LM_MAX_DAMPING",
    "LM_SHRINK",
    "LOSS_CODES",
    "LOSS_NAMES",
    "CONVERGED",
    "RATE_TRUSTED",
    "MAX_ITERATIONS",
    "NO_OBSERVATIONS",
    "NO_UPDATE",
    "STALLED",
    "STOP_REASONS",
    "LossName",
    "accepts",
    "initial_damping",
    "lane_rules",
    "lane_small_updates",
    "next_damping",
    "observed_only",
    "small_update",
    "stop_reason",
]

#: numba options of every compiled kernel: cached on disk, releases the GIL, numpy's
#: floating-point semantics (division by zero gives inf, never raises).
JIT = MappingProxyType({"cache": True, "nogil": True, "error_model": "numpy"})
#: :data:`JIT` for the small helpers that are inlined into their callers.
INLINE = MappingProxyType({**JIT, "inline": "always"})

#: Robust loss names of ``SolverConfig.loss``.
LossName = Literal["l2", "huber", "cauchy"]
LOSS_NAMES: tuple[str, ...] = typing.get_args(LossName)
#: Kernel code of each loss name.
LOSS_CODES: dict[str, int] = {name: code for code, name in enumerate(LOSS_NAMES)}
L2, HUBER, CAUCHY = (LOSS_CODES[n] for n in LOSS_NAMES)

#: LM damping factor after an accepted step.
LM_SHRINK = 0.3
#: LM damping factor after a rejected step.
LM_GROW = 10.0
#: LM damping beyond which a frame stops: no step lowers the objective.
LM_MAX_DAMPING = 1e10
#: Relative objective change at most this (against ``max(cost, 1e-30)``) is flat.
FLAT_RTOL = 1e-14
FLAT_FLOOR = 1e-30
#: Largest shrink rate of accepted updates that :func:`small_update` extrapolates from.
RATE_TRUSTED = 0.5
#: :func:`small_update`'s ``last_pos`` / ``last_ang`` of a frame with no accepted update yet.
NO_UPDATE = -1.0

#: Slack of the ball cone test in ulps of the working precision: ``e > 1 + 16 eps``.
BALL_SLACK_ULPS = 16

#: Fewest observed keypoints for a Kabsch rotation.
KABSCH_MIN_KEYPOINTS = 3
#: Second singular value below this fraction of the first: collinear keypoints.
KABSCH_RANK_RTOL = 1e-9


#: ``stop_reason`` codes (FitResult and the fit store; -1 there: not fitted).
CONVERGED, MAX_ITERATIONS, STALLED, NO_OBSERVATIONS = 0, 1, 2, 3
#: Name of each ``stop_reason`` code, by code.
STOP_REASONS: tuple[str, ...] = ("converged", "max_iterations", "stalled", "no_observations")
#: What each stop reason means for the fitted pose, by name (the summary and report say it).
STOP_MEANINGS: dict[str, str] = {
    "converged": "reached a stationary point: the pose is the least-squares optimum",
    "max_iterations": "stopped at the iteration cap while still improving: usually close, "
    "but not verified optimal (raise solver.n_iterations)",
    "stalled": "no damped step lowers the objective any more: a stationary point up to "
    "round-off, or a degenerate frame",
    "no_observations": "no keypoint observed: the pose is the prior (neutral) or the "
    "previous frame's, not a fit",
}


def observed_only(values: np.ndarray, stop_reason: np.ndarray | None) -> np.ndarray:
    """``values`` as float with NaN where ``stop_reason`` is ``no_observations``.

    A frame with no observed keypoint has an RMS (and a largest error) of nothing, stored
    as 0; summaries take their medians over the frames that were fitted.

    Parameters
    ----------
    values : (T, ...) array
        Per frame(-individual) values, e.g. ``rms_error``.
    stop_reason : array of the same shape, or None
        The codes (:data:`STOP_REASONS`); None (an older store) keeps every value.
    """
    values = np.asarray(values, dtype=np.float64)
    if stop_reason is None:
        return values
    return np.where(np.asarray(stop_reason) == NO_OBSERVATIONS, np.nan, values)


def initial_damping(mode: str, damping: float, lm_initial_damping: float) -> float:
    """Relative damping a frame starts with: ``damping`` in ``gn``, else ``lm_initial_damping``.

    Parameters
    ----------
    mode : {"gn", "lm"}
    damping, lm_initial_damping : float
        The :class:`~pipeline.solve.config.SolverConfig` fields.

    Returns
    -------
    float
    """
    return damping if mode == "gn" else lm_initial_damping


@nb.njit(**INLINE)
def accepts(gn: bool, finite: bool, cost: float, cand: float) -> bool:
    """The accept/reject test of one step.

    Parameters
    ----------
    gn : bool
        ``mode == "gn"``: every finite step is taken.
    finite : bool
        The objective before the step and the stepped pose are finite.
    cost, cand : float
        The objective before and after the step (``cand`` is read in ``lm`` mode only).

    Returns
    -------
    bool
        The frame moves to the stepped pose.
    """
    return finite and (gn or cand <= cost)


@nb.njit(**INLINE)
def next_damping(gn: bool, lam: float, accepted: bool, floor: float) -> float:
    """The LM damping after a step: shrunk after an accepted one, grown after a rejected one.

    Parameters
    ----------
    gn : bool
        ``mode == "gn"``: the damping stays ``lam``.
    lam : float
        The relative damping of the step.
    accepted : bool
        :func:`accepts`' answer.
    floor : float
        ``SolverConfig.damping``: shrinking never goes below it.

    Returns
    -------
    float
    """
    if gn:
        return lam
    return max(lam * LM_SHRINK, floor) if accepted else lam * LM_GROW


@nb.njit(**INLINE)
def _shrink(update: float, last: float) -> float:
    """``update / last``: 0 for no update, inf after a zero one."""
    if update == 0.0:
        return 0.0
    return update / last if last > 0.0 else math.inf


@nb.njit(**INLINE)
def small_update(
    max_pos: float,
    max_ang: float,
    last_pos: float,
    last_ang: float,
    pos_tol: float,
    ang_tol: float,
    distance: bool,
) -> bool:
    """The **Stop** rule's *small*: the update is under both tolerances.

    Parameters
    ----------
    max_pos, max_ang : float
        The applied update's largest position (length units) and angle (rad) change.
    last_pos, last_ang : float
        The same of the frame's last accepted update before it; :data:`NO_UPDATE` when
        there is none (the frame's first, or the first after a rejected LM step).
    pos_tol, ang_tol : float
        The tolerances (length units, rad).
    distance : bool
        ``SolverConfig.tolerance_on == "distance"``: bound the distance still left to the
        optimum, ``update * r / (1 - r)`` with ``r`` the larger shrink ratio of the
        two, when ``r < RATE_TRUSTED`` (a linearly converging iteration's remaining
        steps sum to that); the update itself otherwise.

    Returns
    -------
    bool
    """
    f = 1.0
    if distance and last_ang != NO_UPDATE:
        r = max(_shrink(max_pos, last_pos), _shrink(max_ang, last_ang))
        if r < RATE_TRUSTED:
            f = r / (1.0 - r)
    return max_pos * f < pos_tol and max_ang * f < ang_tol


@nb.njit(**JIT)
def lane_small_updates(
    max_pos: np.ndarray,
    max_ang: np.ndarray,
    last: np.ndarray,
    pos_tol: float,
    ang_tol: float,
    distance: bool,
) -> np.ndarray:
    """:func:`small_update` on every lane: ``(L,)`` updates, ``last`` ``(L, 2)``."""
    n = max_pos.shape[0]
    small = np.empty(n, np.bool_)
    for i in range(n):
        small[i] = small_update(float(max_pos[i]), float(max_ang[i]), last[i, 0], last[i, 1],
                                pos_tol, ang_tol, distance)  # fmt: skip
    return small


@nb.njit(**INLINE)
def stop_reason(
    gn: bool,
    finite: bool,
    small: bool,
    accepted: bool,
    cost: float,
    cand: float,
    lam: float,
    cost_tolerance: float,
) -> tuple[int, bool]:
    """The stop decision after one step (the module docstring's **Stop** rule).

    Parameters
    ----------
    gn, finite, cost, cand
        As :func:`accepts`' (``cand`` is read in ``lm`` mode only).
    small : bool
        The applied update is under both tolerances.
    accepted : bool
        :func:`accepts`' answer.
    lam : float
        The damping after the step (:func:`next_damping`).
    cost_tolerance : float
        ``SolverConfig.cost_tolerance``.

    Returns
    -------
    reason : int
        The frame's ``stop_reason`` (:data:`STOP_REASONS`) if it stops now or at the cap.
    done : bool
        The frame stops now. A step that is not finite reports *stalled* but never stops
        the frame: it keeps its pose and goes on to the iteration cap.
    """
    if not finite:
        return STALLED, False
    if gn:
        if small:
            return CONVERGED, True
        return MAX_ITERATIONS, False
    ref = max(cost, FLAT_FLOOR)
    flat = abs(cost - cand) <= FLAT_RTOL * ref
    gain = accepted and cost - cand <= cost_tolerance * ref
    if (accepted and small) or flat or gain:
        return CONVERGED, True
    if lam > LM_MAX_DAMPING:
        return STALLED, True
    return MAX_ITERATIONS, False


@nb.njit(**JIT)
def lane_rules(
    gn: bool,
    finite: np.ndarray,
    small: np.ndarray,
    cost: np.ndarray,
    cand: np.ndarray,
    lam: np.ndarray,
    floor: float,
    cost_tolerance: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`accepts`, :func:`next_damping` and :func:`stop_reason` on every lane.

    Parameters
    ----------
    gn, floor, cost_tolerance
        As those functions take them.
    finite, small : (L,) bool
    cost, cand, lam : (L,) float
        Per lane, as those functions take them (float32 is widened exactly).

    Returns
    -------
    accepted : (L,) bool
    lam : (L,) array
        The damping after the step, in ``lam``'s dtype.
    reason : (L,) int8
    done : (L,) bool
    """
    n = lam.shape[0]
    accepted = np.empty(n, np.bool_)
    new_lam = np.empty_like(lam)
    reason = np.empty(n, np.int8)
    done = np.empty(n, np.bool_)
    for i in range(n):
        c, d = float(cost[i]), float(cand[i])
        a = accepts(gn, finite[i], c, d)
        la = next_damping(gn, float(lam[i]), a, floor)
        reason[i], done[i] = stop_reason(gn, finite[i], small[i], a, c, d, la, cost_tolerance)
        accepted[i] = a
        new_lam[i] = la
    return accepted, new_lam, reason, done
