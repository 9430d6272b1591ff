"""Which keypoints a coupled DOF moves, as screws on subtrees (the compiled engine's view).

The compiled engine assembles the normal equations from one screw per coordinate acting
on the keypoints strictly below one joint, and factors them along a tree with no fill
(:mod:`pipeline.solve.compiled.normal`). A coupled DOF (:mod:`pipeline.kinematics.steps`)
moves the keypoints below each joint holding one of its steps, by the chain-weighted sum
of those steps' screws. All steps in the DOF's own joint (its *home*, e.g. a knee's angle
and the tibia translations that are splines of it) make one screw on the home subtree, so
such a plan has the structure of an uncoupled one. A step in another joint (e.g. a
patella's translations, driven through a coupler by the knee angle, or a vertebra's
rotation, driven by the lumbar coordinates below it) is an *extra group* of the DOF: its
screw moves that joint's subtree, on top of whatever else the DOF moves there.

The keypoints a DOF moves are then the union of its groups' subtrees, and two coordinates
meet in the normal matrix where a group of one and a group of the other have nested
subtrees (``xi_a^T Phi_J xi_b``, ``J`` the deeper of the two joints). The factorization
needs every such pair on one path of its elimination tree: the tree of the uncoupled
state order (each coordinate below the one just above it in the kinematic tree), with a
coordinate moved under its highest-index partner where a coupling reaches across
branches (:func:`elimination_parents`; e.g. the abdomen's coordinates under the lumbar
coordinates that drive its joint too). A plan whose pairs no such tree holds (a coupler
between two legs) is refused by the compiled engine, with the two coordinates named.

Steps that move nothing are ignored: those whose function chain is a ``Constant`` and
those in joints without children (a joint's own keypoint is its origin before its steps).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from pipeline.bodyplan.model import BodyPlan
from pipeline.kinematics.plan_arrays import compile_plan

__all__ = [
    "StepGroups",
    "compiled_refusal",
    "elimination_parents",
    "joint_ancestors",
    "meet",
    "step_groups",
    "tree_parents",
]


@dataclass(frozen=True)
class StepGroups:
    """Screw indices of a plan's steps, and the elimination tree of its coordinates.

    Attributes
    ----------
    screw : (M,) int64
        Per step, the screw it adds to: its root DOF ``k`` (a step in the home joint),
        ``N + e`` (extra group ``e``), or -1 (it moves no keypoint).
    extra_start : (N + 1,) int64
        The extra groups of DOF ``k`` are ``extra_start[k]:extra_start[k + 1]``.
    extra_joint : (G,) int64
        The joint whose subtree extra group ``e`` moves.
    state_parent : (n_root + N,) int64
        The elimination tree over the state ``[root, dofs]``: the coordinate just above
        each (-1 at the top), :func:`tree_parents` unless a coupling reaches across
        branches (:func:`elimination_parents`).
    refusal : str or None
        Why the compiled engine cannot solve the plan (None: it can).
    """

    screw: np.ndarray
    extra_start: np.ndarray
    extra_joint: np.ndarray
    state_parent: np.ndarray
    refusal: str | None

    def groups(self, dof_joint: np.ndarray) -> list[list[tuple[int, int]]]:
        """Per DOF ``k``, its groups as ``(screw, joint)``: its home ``(k, dof_joint[k])`` first."""
        n = len(self.extra_start) - 1
        return [
            [(k, int(dof_joint[k]))]
            + [
                (n + e, int(self.extra_joint[e]))
                for e in range(self.extra_start[k], self.extra_start[k + 1])
            ]
            for k in range(n)
        ]


def _constant(fn) -> bool:
    if fn.type == "Constant":
        return True
    return fn.type == "MultiplierFunction" and (fn.scale == 0.0 or _constant(fn.function))


def tree_parents(parent: np.ndarray, dof_joint: np.ndarray, n_root: int) -> np.ndarray:
    """The uncoupled state order's tree: each coordinate's nearest coordinate above it.

    The joint's previous DOF, else the last DOF of the nearest ancestor joint that has
    DOFs, else the last root coordinate; -1 at the top.

    Parameters
    ----------
    parent : (J,) int
    dof_joint : (N,) int
        Joint of each DOF (tree order: a joint's DOFs contiguous, parents' first).
    n_root : int

    Returns
    -------
    (n_root + N,) int64
    """
    nj, n, nr = len(parent), len(dof_joint), n_root
    counts = np.bincount(np.asarray(dof_joint, np.intp), minlength=nj)
    dof_start = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    last_dof = np.full(nj, -1, np.int64)  # last state coordinate at or above joint
    state_parent = np.arange(-1, nr + n - 1, dtype=np.int64)
    for j in range(nj):
        p = parent[j]
        above = (nr - 1) if p < 0 else last_dof[p]
        if counts[j]:
            state_parent[nr + dof_start[j]] = above
            last_dof[j] = nr + dof_start[j + 1] - 1
        else:
            last_dof[j] = above
    return state_parent


def _path(state_parent: np.ndarray, s: int) -> list[int]:
    out, i = [], int(state_parent[s])
    while i >= 0:
        out.append(i)
        i = int(state_parent[i])
    return out


def meet(ancestors: list[list[int]], a: int, b: int) -> int:
    """The deeper of joints ``a`` and ``b`` when one is at or below the other, else -1."""
    if a == b or a in ancestors[b]:
        return b
    if b in ancestors[a]:
        return a
    return -1


def elimination_parents(
    state_parent: np.ndarray,
    groups: list[list[tuple[int, int]]],
    ancestors: list[list[int]],
    n_root: int,
    names: tuple[str, ...],
) -> tuple[np.ndarray, str | None]:
    """An elimination tree holding every pair of coordinates the normal matrix couples.

    DOFs ``i < k`` are coupled when a group of one and a group of the other move nested
    subtrees (:func:`meet`). Each DOF, in state order, goes under its highest-index
    partner, or its :func:`tree_parents` parent if that is higher; the tree holds the plan
    when every partner of every DOF is on its path.

    Parameters
    ----------
    state_parent : (n_root + N,) int
        :func:`tree_parents`.
    groups : list of list of (screw, joint)
        :meth:`StepGroups.groups`.
    ancestors : list of list of int
        Per joint, its ancestor joints.
    n_root : int
    names : tuple of str
        DOF names (for the refusal).

    Returns
    -------
    (n_root + N,) int64
        The tree (``state_parent`` itself when it holds every pair).
    str or None
        Why no tree of this kind holds the pairs, naming two coordinates.
    """
    n, nr = len(groups), n_root
    partners: list[list[int]] = [[] for _ in range(n)]
    for k in range(n):
        for i in range(k):
            if any(meet(ancestors, ja, jb) >= 0 for _, ja in groups[i] for _, jb in groups[k]):
                partners[k].append(i)
    out = np.asarray(state_parent, np.int64).copy()
    for k in range(n):
        top = max([nr + i for i in partners[k]], default=-1)
        if top > out[nr + k]:
            out[nr + k] = top
    for k in range(n):
        path = set(_path(out, nr + k))
        for i in partners[k]:
            if nr + i not in path:
                return out, (
                    f"coordinates {names[i]!r} and {names[k]!r} move keypoints in common "
                    "without one being above the other in any elimination tree the "
                    "factorization can use"
                )
    return out, None


@lru_cache(maxsize=64)
def step_groups(plan: BodyPlan) -> StepGroups:
    """The :class:`StepGroups` of ``plan`` (cached; trivial for an uncoupled plan)."""
    m = compile_plan(plan, np.float64)
    n, nj = m.n_dofs, m.n_joints
    parent = np.asarray(m.parent)
    tree = tree_parents(parent, np.asarray(m.dof_joint), m.n_root)
    step_joint = np.repeat(np.arange(nj), [len(j.axes) for j in plan.joints])
    screw = np.asarray(m.step_root, np.int64).copy() if m.coupled else np.arange(n)
    if not m.coupled:
        empty = np.zeros(0, np.int64)
        return StepGroups(screw, np.zeros(n + 1, np.int64), empty, tree, None)
    children = np.bincount(parent[1:], minlength=nj) if nj > 1 else np.zeros(nj, np.intp)
    constant = {s: any(_constant(f) for f in _chain(m, src) + [fn]) for s, fn, src in m.driven}
    extras: list[list[int]] = [[] for _ in range(n)]
    for s in range(m.n_steps):
        j, k = int(step_joint[s]), int(m.step_root[s])
        if children[j] == 0 or constant.get(s, False):
            screw[s] = -1
        elif j != m.dof_joint[k] and j not in extras[k]:
            extras[k].append(j)
    extra_start = np.zeros(n + 1, np.int64)
    extra_start[1:] = np.cumsum([len(e) for e in extras])
    extra_joint = np.array([j for e in extras for j in e], np.int64)
    for s in range(m.n_steps):
        j, k = int(step_joint[s]), int(m.step_root[s])
        if screw[s] >= 0 and j != m.dof_joint[k]:
            screw[s] = n + extra_start[k] + extras[k].index(j)
    partial = StepGroups(screw, extra_start, extra_joint, tree, None)
    ancestors = [_above(parent, j) for j in range(nj)]
    state_parent, why = elimination_parents(
        tree, partial.groups(np.asarray(m.dof_joint)), ancestors, m.n_root, plan.dof_names
    )
    refusal = None
    if why is not None:
        refusal = f"body plan {plan.name or plan.source or '<plan>'!r}: {why}"
    return StepGroups(screw, extra_start, extra_joint, state_parent, refusal)


def compiled_refusal(plan: BodyPlan) -> str | None:
    """Why the compiled engine cannot solve ``plan`` (None: it can)."""
    return step_groups(plan).refusal


def joint_ancestors(parent: np.ndarray) -> list[list[int]]:
    """Per joint, its ancestor joints, nearest first."""
    return [_above(parent, j) for j in range(len(parent))]


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
