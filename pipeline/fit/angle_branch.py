"""Angles on one branch: the fitted hinge coordinates kept continuous over time.

A hinge coordinate (a ``hinge`` DOF, a universal joint's two hinges, a ball joint's
twist) enters forward kinematics only through its rotation, so ``q`` and ``q + 2 pi k``
are the same pose. The solver may land on any of them: a cold frame can settle many
turns away from zero, and two chunks solved apart can sit on different turns. What is
stored (and exported) is one branch per coordinate and individual:

- within a solved sequence (:func:`keep_on_branch`): each frame on the turn nearest the
  frame before it, the first on the turn nearest the coordinate's neutral value, and
  every value inside the coordinate's limits where it has limits (a turn that would leave
  them is not taken);
- across chunks (:func:`pipeline.store.branches.align_chunk_turns`, called before the
  store is published): each chunk turned as a whole onto the turn of the chunk before it.

Neither changes the pose: only whole turns are added, so forward kinematics of the
stored coordinates equals that of the solver's. Coordinates that drive a function
(an OpenSim coupler or a driven axis) are left as solved, since their functions need not
be periodic, and so are slides and a ball joint's swing vector.
"""

from __future__ import annotations

import numpy as np

from pipeline.bodyplan import BodyPlan
from pipeline.kinematics.euler import unwrap

__all__ = ["TWO_PI", "keep_on_branch", "periodic_dofs"]

TWO_PI = 2.0 * np.pi


def periodic_dofs(plan: BodyPlan) -> np.ndarray:
    """``(n_dofs,)`` bool: the coordinates whose value is defined only up to whole turns.

    Hinge DOFs that no driven axis or coupling takes as its coordinate.
    """
    drives = {a.coordinate for j in plan.joints for a in j.driven}
    drives |= {c.coordinate for c in plan.couplings}
    types = [d.type for j in plan.joints for d in j.dofs]
    return np.array(
        [t == "hinge" and n not in drives for t, n in zip(types, plan.dof_names, strict=True)],
        dtype=bool,
    )


def allowed_turns(
    turns: np.ndarray, value: np.ndarray, lower: np.ndarray, upper: np.ndarray
) -> np.ndarray:
    """``turns`` clipped to the whole turns that keep ``value + 2 pi turns`` in limits.

    Where no turn keeps the value inside (it is outside already), no turn is taken.
    """
    with np.errstate(invalid="ignore"):
        lo = np.ceil((lower - value) / TWO_PI - 1e-9)
        hi = np.floor((upper - value) / TWO_PI + 1e-9)
        out = np.clip(turns, lo, hi)
    out = np.where(lo <= hi, out, 0.0)
    return np.where(np.isfinite(out), out, 0.0)


def keep_on_branch(
    dof_value: np.ndarray, plan: BodyPlan, reference: np.ndarray | None = None
) -> np.ndarray:
    """The solved coordinates of one sequence on one continuous branch.

    Parameters
    ----------
    dof_value : ndarray, shape (T, n_dofs)
        A sequence's solved coordinates (rad, or length units for slides), in time order.
    plan : BodyPlan
    reference : ndarray, shape (n_dofs,), optional
        The value the first frame's turn is chosen near (default: the plan's neutral).

    Returns
    -------
    ndarray, shape (T, n_dofs)
        ``dof_value`` plus whole turns on its periodic coordinates
        (:func:`periodic_dofs`): consecutive finite values differ by at most pi unless a
        coordinate's limits forbid the turn; NaN stays NaN; other coordinates unchanged.
    """
    value = np.asarray(dof_value, dtype=np.float64)
    periodic = periodic_dofs(plan)
    if not periodic.any() or value.shape[0] == 0:
        return value.copy()
    out = value.copy()
    x = value[:, periodic]
    ref = np.asarray(plan.neutral if reference is None else reference, np.float64)[periodic]
    u = unwrap(x, axis=0)
    finite = np.isfinite(x)
    first = np.argmax(finite, axis=0)
    start = x[first, np.arange(x.shape[1])]
    shift = np.where(np.isfinite(start), np.rint((ref - start) / TWO_PI), 0.0)
    turns = np.rint((u - x) / np.float64(TWO_PI)) + shift
    turns = allowed_turns(turns, x, plan.lower[periodic], plan.upper[periodic])
    out[:, periodic] = x + TWO_PI * turns
    return out
