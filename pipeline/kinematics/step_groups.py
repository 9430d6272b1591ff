"""Which keypoints a coupled DOF moves, as screws on subtrees (the compiled engine's view).

The compiled engine assembles the normal equations from one screw per coordinate acting
on the keypoints strictly below one joint, and factors them along the tree with no fill
(:mod:`pipeline.solve.compiled.normal`). A coupled DOF (:mod:`pipeline.kinematics.steps`)
moves the keypoints below each joint holding one of its steps, by the chain-weighted sum
of those steps' screws. All steps in the DOF's own joint (its *home*, e.g. a knee's angle
and the tibia translations that are splines of it) make one screw on the home subtree, so
such a plan has the structure of an uncoupled one. A step in another joint (e.g. a
patella's translations, driven through a coupler by the knee angle) is an *extra group*
of the DOF: its screw moves that joint's subtree. The structure survives when every extra
group's subtree is disjoint from the home subtree and from the other groups, holds no DOF
(nothing else couples to the DOF through it), and is moved by exactly the DOFs above the
DOF in the tree's state order (so the entries with those DOFs come out right).

Steps that move nothing are ignored: those whose function chain is a ``Constant`` and
those in joints without children (a joint's own keypoint is its origin before its steps).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from pipeline.bodyplan.model import BodyPlan
from pipeline.kinematics.plan_arrays import compile_plan

__all__ = ["StepGroups", "compiled_refusal", "step_groups"]


@dataclass(frozen=True)
class StepGroups:
    """Screw indices of a plan's steps.

    Attributes
    ----------
    screw : (M,) int64
        Per step, the screw it adds to: its root DOF ``k`` (a step in the home joint),
        ``N + e`` (extra group ``e``), or -1 (it moves no keypoint).
    extra_start : (N + 1,) int64
        The extra groups of DOF ``k`` are ``extra_start[k]:extra_start[k + 1]``.
    extra_joint : (G,) int64
        The joint whose subtree extra group ``e`` moves.
    refusal : str or None
        Why the compiled engine cannot solve the plan (None: it can).
    """

    screw: np.ndarray
    extra_start: np.ndarray
    extra_joint: np.ndarray
    refusal: str | None


def _constant(fn) -> bool:
    if fn.type == "Constant":
        return True
    return fn.type == "MultiplierFunction" and (fn.scale == 0.0 or _constant(fn.function))


@lru_cache(maxsize=64)
def step_groups(plan: BodyPlan) -> StepGroups:
    """The :class:`StepGroups` of ``plan`` (cached; trivial for an uncoupled plan)."""
    m = compile_plan(plan, np.float64)
    n, nj = m.n_dofs, m.n_joints
    parent = np.asarray(m.parent)
    step_joint = np.repeat(np.arange(nj), [len(j.axes) for j in plan.joints])
    screw = np.asarray(m.step_root, np.int64).copy() if m.coupled else np.arange(n)
    if not m.coupled:
        return StepGroups(screw, np.zeros(n + 1, np.int64), np.zeros(0, np.int64), None)
    children = np.bincount(parent[1:], minlength=nj) if nj > 1 else np.zeros(nj, np.intp)
    constant = {s: any(_constant(f) for f in _chain(m, src) + [fn]) for s, fn, src in m.driven}
    ancestors = [_above(parent, j) for j in range(nj)]
    extras: list[list[int]] = [[] for _ in range(n)]
    refusal = None
    for s in range(m.n_steps):
        j, k = int(step_joint[s]), int(m.step_root[s])
        if children[j] == 0 or constant.get(s, False):
            screw[s] = -1
        elif j != m.dof_joint[k] and j not in extras[k]:
            extras[k].append(j)
    name = plan.name or plan.source or "<plan>"
    for k in range(n):
        home = int(m.dof_joint[k])
        for j in extras[k]:
            why = _extra_problem(m, parent, ancestors, k, home, j, extras[k])
            if why and refusal is None:
                refusal = (
                    f"body plan {name!r}: DOF {plan.dof_names[k]!r} drives axes of joint "
                    f"{plan.joints[j].name!r} as well as its own joint "
                    f"{plan.joints[home].name!r}, and {why}"
                )
    extra_start = np.zeros(n + 1, np.int64)
    extra_start[1:] = np.cumsum([len(e) for e in extras])
    extra_joint = np.array([j for e in extras for j in e], np.int64)
    for s in range(m.n_steps):
        j, k = int(step_joint[s]), int(m.step_root[s])
        if screw[s] >= 0 and j != m.dof_joint[k]:
            screw[s] = n + extra_start[k] + extras[k].index(j)
    return StepGroups(screw, extra_start, extra_joint, refusal)


def compiled_refusal(plan: BodyPlan) -> str | None:
    """Why the compiled engine cannot solve ``plan`` (None: it can)."""
    return step_groups(plan).refusal


def _chain(m, src: int) -> list:
    out: list = []
    while src < 0:
        fn, src = m.couplings[-1 - src]
        out.append(fn)
    return out


def _above(parent: np.ndarray, j: int) -> list[int]:
    out, p = [], parent[j]
    while p >= 0:
        out.append(int(p))
        p = parent[p]
    return out


def _extra_problem(m, parent, ancestors, k: int, home: int, j: int, group: list[int]) -> str:
    """What breaks the tree structure for extra group ``j`` of DOF ``k`` ('' if nothing)."""
    if home in ancestors[j] or j in ancestors[home] or j == home:
        return "one joint is below the other"
    below_j = [i for i in range(len(parent)) if i == j or j in ancestors[i]]
    if np.isin(m.dof_joint, below_j).any():
        return "the driven joint's subtree has coordinates of its own"
    for other in group:
        if other != j and (other in ancestors[j] or j in ancestors[other]):
            return "two of its driven joints are one below the other"
    moving_j = set(np.flatnonzero(np.isin(m.dof_joint, ancestors[j])).tolist())
    before = {i for i in np.flatnonzero(m.dof_joint == home) if i < k}
    moving_k = set(np.flatnonzero(np.isin(m.dof_joint, ancestors[home])).tolist()) | before
    if moving_j != moving_k:
        return "different coordinates move the two joints"
    return ""
