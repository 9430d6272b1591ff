"""Compile a :class:`~pipeline.bodyplan.BodyPlan` into the arrays the numeric kernels use.

The compiled model is derived, immutable and cached per (plan, dtype). It groups joints by
depth so that forward kinematics runs one numpy call per (depth, DOF slot) instead of one
per joint, and it groups the DOFs into *blocks* (the subtrees hanging from the separator)
so that the normal equations can be eliminated block by block (see
:mod:`pipeline.solve.numpy.normal`).

Separator and blocks
--------------------
The separator holds the coordinates every keypoint may depend on: the 6 root DOFs of a
free base, plus the DOFs of the root joint and of the chain of single-child joints below
it. Each child subtree of the separator's last joint is a block: its DOFs move only its own
keypoints, so the normal matrix is block-diagonal apart from the separator rows and
columns (an arrow matrix), and the block system is eliminated without fill.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from pipeline.bodyplan.model import BodyPlan
from pipeline.kinematics.rotations import quat_to_matrix

__all__ = [
    "HINGE",
    "HINGE_ALIGNED",
    "SLIDE",
    "SWING1",
    "SWING2",
    "KinematicModel",
    "LevelOps",
    "compile_plan",
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
    plan: BodyPlan,
    parent: np.ndarray,
    dof_start: np.ndarray,
    dof_type: np.ndarray,
    dof_axis: np.ndarray,
    offset_identity: np.ndarray,
) -> tuple[LevelOps, ...]:
    depth = _depths(parent)
    levels = []
    for d in range(int(depth.max()) + 1):
        joints = np.flatnonzero(depth == d)
        counts = np.array([len(plan.joints[j].dofs) for j in joints], dtype=np.intp)
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
    dof_start = np.cumsum([0] + [len(j.dofs) for j in plan.joints])[:-1]
    dof_joint = np.asarray(plan.dof_joint, dtype=np.intp)

    types, axes, cones, swings = [], [], [], []
    for j in plan.joints:
        for i, dof in enumerate(j.dofs):
            if dof.type == "hinge":
                types.append(HINGE)
            elif dof.type == "slide":
                types.append(SLIDE)
            elif i + 1 < len(j.dofs) and j.dofs[i + 1].type == "swing":
                types.append(SWING1)
                k = len(types) - 1
                swings.append((k, k + 1))
                lim = j.kind.swing_limit if j.kind is not None else None
                cones.append(lim if lim is not None else (np.pi, np.pi))
            else:
                types.append(SWING2)
            axes.append(dof.axis)
    dof_type = np.array(types, dtype=np.intp)
    anc: list[np.ndarray] = []
    for k in range(plan.n_joints):
        chain = []
        p = parent[k]
        while p >= 0:
            chain.append(p)
            p = parent[p]
        anc.append(np.flatnonzero(np.isin(dof_joint, chain)))
    sep_dofs, sep_keypoints, blocks = _partition(plan, parent, dof_joint)

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
        dof_axis=arr(axes, (plan.n_dofs, 3)),
        angular=dof_type != SLIDE,
        neutral=arr(plan.neutral),
        lower=arr(plan.lower),
        upper=arr(plan.upper),
        prior_scale=arr(plan.dof_weight_scalers),
        joint_weight=arr(plan.joint_weight_scalers),
        levels=_levels(plan, parent, dof_start, dof_type, np.asarray(axes), offset_identity),
        hinge_dofs=np.flatnonzero(dof_type == HINGE),
        free_angles=np.flatnonzero(
            (dof_type == HINGE) & ~np.isfinite(plan.lower) & ~np.isfinite(plan.upper)
        ),
        axis_sign=arr(
            [
                np.sign(a[_aligned_axis(np.asarray(a))])
                if t == HINGE and _aligned_axis(np.asarray(a)) >= 0
                else 1.0
                for a, t in zip(axes, types, strict=True)
            ],
            (plan.n_dofs,),
        ),
        ball_swing=np.array(swings, dtype=np.intp).reshape(-1, 2),
        ball_cone=arr(cones, (len(cones), 2)),
        anc_dofs=tuple(anc),
        sep_dofs=sep_dofs,
        sep_keypoints=sep_keypoints,
        blocks=blocks,
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
