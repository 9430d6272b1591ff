"""Compile a :class:`~pipeline.bodyplan.BodyPlan` into the arrays the numeric kernels use.

The compiled model is derived, immutable and cached per (plan, dtype). It groups joints by
depth so that forward kinematics runs one numpy call per (depth, DOF slot) instead of one
per joint, and it groups the DOFs into *blocks* (the subtrees hanging from the separator)
so that the normal equations can be eliminated block by block (see
:mod:`pipeline.solve.numpy.normal`).

Steps
-----
The transform axes of a joint, its DOFs and its driven axes (version 3) in the order they
apply, are its *steps*; ``levels`` index steps. Each step's value is a function of exactly
one DOF, its ``step_root`` (a DOF's own step: the identity; a driven axis: its function of
a DOF, or of a coupling, which is a function of a DOF or an earlier coupling, so a chain
of one-argument functions). Without driven axes the steps are the DOFs (``n_steps ==
n_dofs``, ``step_*`` equal the ``dof_*`` arrays) and the model is what it always was.

Separator and blocks
--------------------
The separator holds the coordinates every keypoint may depend on: the 6 root DOFs of a
free base, plus the DOFs of the root joint and of the chain of single-child joints below
it. Each child subtree of the separator's last joint is a block: its DOFs move only its own
keypoints, so the normal matrix is block-diagonal apart from the separator rows and
columns (an arrow matrix), and the block system is eliminated without fill. A coupled
plan (driven axes) puts every DOF in the separator and has no blocks: a coordinate may
move axes in several subtrees.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from pipeline.bodyplan.functions import Function
from pipeline.bodyplan.model import BodyPlan
from pipeline.kinematics.rotations import quat_to_matrix
from pipeline.kinematics.steps import Steps

__all__ = [
    "HINGE",
    "HINGE_ALIGNED",
    "SLIDE",
    "SWING1",
    "SWING2",
    "KinematicModel",
    "LevelOps",
    "compile_plan",
    "with_offsets",
]

HINGE, SLIDE, SWING1, SWING2 = 0, 1, 2, 3
#: Level-op code of a hinge whose axis is +-x, +-y or +-z (rotation mixes two columns).
HINGE_ALIGNED = 4


@dataclass(frozen=True)
class LevelOps:
    """Joints at one depth of the tree and the DOF operations applied to them.

    Attributes
    ----------
    joints : (n,) int
        Joint indices at this depth.
    parents : (n,) int
        Their parents (-1 for the root).
    offset_identity : bool
        True when every ``offset_quat`` at this depth is the identity.
    slots : tuple
        One entry per DOF slot: ``(op, local, dofs, axis)`` tuples, ``op`` in
        ``{HINGE, HINGE_ALIGNED, SLIDE, SWING1}``, ``local`` the positions within
        ``joints``, ``dofs`` the DOF indices (for ``SWING1`` the first of the swing pair)
        and ``axis`` the coordinate axis (0, 1, 2) of an aligned hinge group, else -1.
    """

    joints: np.ndarray
    parents: np.ndarray
    offset_identity: bool
    slots: tuple[tuple[tuple[int, np.ndarray, np.ndarray, int], ...], ...]


@dataclass(frozen=True, eq=False)
class KinematicModel:
    """Arrays of a compiled body plan (float arrays in ``dtype``).

    Attributes
    ----------
    n_joints, n_dofs : int
    free_base : bool
        The root carries 6 free coordinates (position, then world rotation increment).
    n_root : int
        6 for a free base, else 0. State order: ``[root (n_root), dofs (n_dofs)]``.
    parent : (J,) int
    offset_pos : (J, 3)
    offset_rot : (J, 3, 3)
    dof_type : (N,) int
        ``HINGE``, ``SLIDE``, ``SWING1``/``SWING2`` (the two swing coordinates of a ball).
    dof_axis : (N, 3)
        Unit axis in the joint frame (for swings, the basis vectors ``b1``/``b2``).
    angular : (N,) bool
        Rotational coordinates (convergence uses ``angle_tolerance`` for them).
    neutral, lower, upper, prior_scale : (N,)
    joint_weight : (J,)
    levels : tuple of LevelOps
    hinge_dofs : (n_hinge,) int
        All hinge DOFs.
    free_angles : (n,) int
        Hinge DOFs without limits (wrapped into ``neutral +- pi`` on write).
    axis_sign : (N,)
        Sign of an aligned hinge's axis (its angle is folded by it); 1 elsewhere.
    ball_swing : (n_ball, 2) int
        DOF indices of each ball joint's swing pair.
    ball_cone : (n_ball, 2)
        Cone half-angles (rad) about ``b1`` and ``b2``.
    anc_dofs : tuple of (n,) int arrays
        Per keypoint, the DOFs that move it (the DOFs of its strict ancestors).
    sep_dofs : (n_sep_dofs,) int
        DOFs in the separator (see module docstring).
    blocks : tuple of (dofs, keypoints) pairs of int arrays
    coupled : bool
        The plan has driven axes (its steps are not its DOFs).
    n_steps : int
        Number of steps ``M`` (module docstring); ``n_dofs`` when not coupled.
    step_type, step_axis, step_sign : (M,), (M, 3), (M,)
        As ``dof_type``, ``dof_axis``, ``axis_sign``, per step.
    step_root : (M,) int
        The DOF each step's value is a function of.
    step_of_dof : (N,) int
        Each DOF's own step.
    driven : tuple of (step, Function, source)
        Driven steps: value ``Function(coordinate)`` with ``source`` a DOF index
        (``>= 0``) or coupling ``-1 - i``.
    couplings : tuple of (Function, source)
        The plan's couplings in order, ``source`` as in ``driven``.
    anc_steps : tuple of (n,) int arrays
        Per keypoint, the steps that move it.
    """

    n_joints: int
    n_dofs: int
    free_base: bool
    dtype: np.dtype
    parent: np.ndarray
    offset_pos: np.ndarray
    offset_rot: np.ndarray
    dof_joint: np.ndarray
    dof_type: np.ndarray
    dof_axis: np.ndarray
    angular: np.ndarray
    neutral: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    prior_scale: np.ndarray
    joint_weight: np.ndarray
    levels: tuple[LevelOps, ...]
    hinge_dofs: np.ndarray
    free_angles: np.ndarray
    axis_sign: np.ndarray
    ball_swing: np.ndarray
    ball_cone: np.ndarray
    anc_dofs: tuple[np.ndarray, ...]
    sep_dofs: np.ndarray
    sep_keypoints: np.ndarray
    blocks: tuple[tuple[np.ndarray, np.ndarray], ...]
    coupled: bool = False
    n_steps: int = 0
    step_type: np.ndarray | None = None
    step_axis: np.ndarray | None = None
    step_sign: np.ndarray | None = None
    step_root: np.ndarray | None = None
    step_of_dof: np.ndarray | None = None
    driven: tuple[tuple[int, Function, int], ...] = ()
    couplings: tuple[tuple[Function, int], ...] = ()
    anc_steps: tuple[np.ndarray, ...] = ()

    @property
    def n_root(self) -> int:
        """Number of root coordinates (6 for a free base)."""
        return 6 if self.free_base else 0

    @property
    def n_state(self) -> int:
        """Size of the tangent state: root coordinates plus DOFs."""
        return self.n_root + self.n_dofs


def _depths(parent: np.ndarray) -> np.ndarray:
    depth = np.zeros(len(parent), dtype=np.intp)
    for j, p in enumerate(parent):
        depth[j] = 0 if p < 0 else depth[p] + 1
    return depth


def _aligned_axis(axis: np.ndarray) -> int:
    """Coordinate axis (0, 1, 2) that ``axis`` lies on (either sign), else -1."""
    big = np.flatnonzero(np.abs(axis) > 1.0 - 1e-12)
    return int(big[0]) if big.size == 1 and np.sum(np.abs(axis)) < 1.0 + 1e-12 else -1


def _levels(
    n_steps: np.ndarray,
    parent: np.ndarray,
    dof_start: np.ndarray,
    dof_type: np.ndarray,
    dof_axis: np.ndarray,
    offset_identity: np.ndarray,
) -> tuple[LevelOps, ...]:
    """Level ops over the joints' steps (``n_steps`` per joint, from ``dof_start``)."""
    depth = _depths(parent)
    levels = []
    for d in range(int(depth.max()) + 1):
        joints = np.flatnonzero(depth == d)
        counts = n_steps[joints]
        slots = []
        for s in range(int(counts.max(initial=0))):
            groups: dict[tuple[int, int], list[int]] = {}
            for i, j in enumerate(joints):
                if counts[i] <= s:
                    continue
                k = dof_start[j] + s
                op, ax = int(dof_type[k]), -1
                if op == SWING2:
                    continue
                if op == HINGE:
                    ax = _aligned_axis(dof_axis[k])
                    op = HINGE_ALIGNED if ax >= 0 else HINGE
                groups.setdefault((op, ax), []).append(i)
            ops = []
            for (op, ax), members in groups.items():
                local = np.array(members, dtype=np.intp)
                ops.append((op, local, dof_start[joints[local]] + s, ax))
            slots.append(tuple(ops))
        levels.append(
            LevelOps(
                joints=joints,
                parents=parent[joints],
                offset_identity=bool(offset_identity[joints].all()),
                slots=tuple(slots),
            )
        )
    return tuple(levels)


def _partition(plan: BodyPlan, parent: np.ndarray, dof_joint: np.ndarray):
    """Separator DOFs/keypoints and the blocks below it (module docstring)."""
    n = plan.n_joints
    if plan.coupled:
        return np.arange(plan.n_dofs), np.arange(n), ()
    children: list[list[int]] = [[] for _ in range(n)]
    for j, p in enumerate(parent):
        if p >= 0:
            children[p].append(j)
    sep_joints = [0]
    while len(children[sep_joints[-1]]) == 1:
        sep_joints.append(children[sep_joints[-1]][0])
    sep_dofs = np.flatnonzero(np.isin(dof_joint, sep_joints))
    blocks = []
    for top in children[sep_joints[-1]]:
        subtree = [top]
        for j in range(top + 1, n):
            if parent[j] in subtree:
                subtree.append(j)
        # Parents precede children, so one forward pass over later joints finds them all.
        dofs = np.flatnonzero(np.isin(dof_joint, subtree))
        keypoints = np.array(subtree, dtype=np.intp)
        blocks.append((dofs, keypoints))
    in_blocks = np.concatenate([b[1] for b in blocks]) if blocks else np.array([], np.intp)
    sep_keypoints = np.setdiff1d(np.arange(n), in_blocks)
    return sep_dofs, sep_keypoints, tuple(blocks)


@lru_cache(maxsize=64)
def _compile(plan: BodyPlan, dtype_name: str) -> KinematicModel:
    dtype = np.dtype(dtype_name)
    parent = np.asarray(plan.parent_indices, dtype=np.intp)
    quats = np.array([j.offset_quat for j in plan.joints], dtype=np.float64)
    offset_rot = quat_to_matrix(quats)
    offset_identity = np.all(np.abs(quats - [1.0, 0.0, 0.0, 0.0]) < 1e-15, axis=1)
    dof_joint = np.asarray(plan.dof_joint, dtype=np.intp)
    steps = Steps(plan)
    n_steps = np.array([len(j.axes) for j in plan.joints], dtype=np.intp)
    step_start = np.cumsum(np.concatenate([[0], n_steps]))[:-1]
    step_joint = np.repeat(np.arange(plan.n_joints), n_steps)
    types, axes, cones, swings = [], [], [], []
    for j in plan.joints:
        ax = j.axes
        for i, dof in enumerate(ax):
            if dof.type == "hinge":
                types.append(HINGE)
            elif dof.type == "slide":
                types.append(SLIDE)
            elif i + 1 < len(ax) and ax[i + 1].type == "swing":
                types.append(SWING1)
                k = len(types) - 1
                swings.append((k, k + 1))
                lim = j.kind.swing_limit if j.kind is not None else None
                cones.append(lim if lim is not None else (np.pi, np.pi))
            else:
                types.append(SWING2)
            axes.append(dof.axis)
    step_type = np.array(types, dtype=np.intp)
    step_of_dof = steps.of_dof
    dof_type = step_type[step_of_dof]
    swings = [(int(np.searchsorted(step_of_dof, a)), int(np.searchsorted(step_of_dof, b)))
              for a, b in swings]  # fmt: skip
    anc_steps: list[np.ndarray] = []
    anc: list[np.ndarray] = []
    for k in range(plan.n_joints):
        chain = []
        p = parent[k]
        while p >= 0:
            chain.append(p)
            p = parent[p]
        anc_steps.append(np.flatnonzero(np.isin(step_joint, chain)))
        anc.append(np.unique(steps.root[anc_steps[-1]]))
    sep_dofs, sep_keypoints, blocks = _partition(plan, parent, dof_joint)
    signs = np.array(
        [
            np.sign(a[_aligned_axis(np.asarray(a))])
            if t == HINGE and _aligned_axis(np.asarray(a)) >= 0
            else 1.0
            for a, t in zip(axes, types, strict=True)
        ]
    )

    def arr(x, shape=None):
        a = np.asarray(x, dtype=dtype)
        if shape is not None:
            a = a.reshape(shape)
        a.flags.writeable = False
        return a

    return KinematicModel(
        n_joints=plan.n_joints,
        n_dofs=plan.n_dofs,
        free_base=not plan.fixed_base,
        dtype=dtype,
        parent=parent,
        offset_pos=arr([j.offset_pos for j in plan.joints], (plan.n_joints, 3)),
        offset_rot=arr(offset_rot),
        dof_joint=dof_joint,
        dof_type=dof_type,
        dof_axis=arr(np.asarray(axes).reshape(-1, 3)[step_of_dof], (plan.n_dofs, 3)),
        angular=dof_type != SLIDE,
        neutral=arr(plan.neutral),
        lower=arr(plan.lower),
        upper=arr(plan.upper),
        prior_scale=arr(plan.dof_weight_scalers),
        joint_weight=arr(plan.joint_weight_scalers),
        levels=_levels(
            n_steps,
            parent,
            step_start,
            step_type,
            np.asarray(axes).reshape(-1, 3),
            offset_identity,
        ),
        hinge_dofs=np.flatnonzero(dof_type == HINGE),
        free_angles=np.flatnonzero(
            (dof_type == HINGE) & ~np.isfinite(plan.lower) & ~np.isfinite(plan.upper)
        ),
        axis_sign=arr(signs[step_of_dof], (plan.n_dofs,)),
        ball_swing=np.array(swings, dtype=np.intp).reshape(-1, 2),
        ball_cone=arr(cones, (len(cones), 2)),
        anc_dofs=tuple(anc),
        sep_dofs=sep_dofs,
        sep_keypoints=sep_keypoints,
        blocks=blocks,
        coupled=plan.coupled,
        n_steps=len(types),
        step_type=step_type,
        step_axis=arr(axes, (len(types), 3)),
        step_sign=arr(signs, (len(types),)),
        step_root=steps.root,
        step_of_dof=step_of_dof,
        driven=steps.driven,
        couplings=steps.couplings,
        anc_steps=tuple(anc_steps),
    )


def compile_plan(plan: BodyPlan, dtype: np.dtype | type | str = np.float64) -> KinematicModel:
    """Compile ``plan`` for float ``dtype`` (cached).

    Parameters
    ----------
    plan : BodyPlan
    dtype : float32 or float64

    Returns
    -------
    KinematicModel
    """
    name = np.dtype(dtype).name
    if name not in ("float32", "float64"):
        raise ValueError(f"dtype must be float32 or float64, not {name}")
    return _compile(plan, name)


def with_offsets(model: KinematicModel, offset_pos: np.ndarray) -> KinematicModel:
    """``model`` with other joint offset positions, without compiling a plan again.

    The compiled arrays of a plan that differs from ``model``'s only in its joints'
    ``offset_pos`` (what subject calibration changes, at every trial step): nothing else
    of a :class:`KinematicModel` depends on them.

    Parameters
    ----------
    model : KinematicModel
    offset_pos : (J, 3) array
        Each joint's offset from its parent (the plan's length unit).

    Returns
    -------
    KinematicModel
    """
    pos = np.array(offset_pos, dtype=model.dtype).reshape(model.n_joints, 3)
    pos.flags.writeable = False
    return replace(model, offset_pos=pos)
