"""Carry a fitted canonical pose onto a Kimodo skeleton through an explicit name table.

A name map ``{our joint: Kimodo joint}`` pairs joints of the fitted body plan with joints
of the Kimodo skeleton (no map: the plan's joints carry the Kimodo names themselves).
Rotations come only from the fit's canonical pose (``root_orientation``, ``joint_rotation``):
our world rotation ``G_m`` of joint ``m`` is composed down the tree,
``G_m = G_parent(m) R(offset_quat_m) joint_rotation_m``, and a mapped Kimodo joint ``j``
gets ``G_j = G_m(j) Q_j``. ``Q_j`` is a constant rest alignment: the rotation (Kabsch over
directions, or the minimal rotation for one direction) that turns Kimodo's rest vectors
from ``j`` to its nearest mapped descendants onto ours, expressed in the joints' rest
frames. Unmapped Kimodo joints keep an identity local rotation (``G_j = G_parent(j)``).

Because bones are aligned, not stretched, a mapped Kimodo joint ``D`` whose nearest mapped
ancestor is ``A`` lands within ``|Q_A v_k - s v_ours|`` of our joint beyond the error at
``A``; :meth:`Retarget.bound` sums these rest-pose mismatches from the root (where the
error is zero) down. The bound is exact as long as our unmapped joints between mapped
ones stay at rest (the exporter warns when such a joint has DOFs).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from pipeline.bodyplan import BodyPlan
from pipeline.errors import flag
from pipeline.export.kimodo.kimodo_error import KimodoError
from pipeline.export.kimodo.skeleton import KimodoSkeleton
from pipeline.kinematics import forward_kinematics
from pipeline.kinematics.rotations import expmap, quat_normalize, quat_to_matrix

__all__ = ["Retarget", "build_retarget"]


def _ancestors(parents: np.ndarray, j: int) -> list[int]:
    out = []
    while parents[j] >= 0:
        j = int(parents[j])
        out.append(j)
    return out


def _minimal_rotation(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = a / np.linalg.norm(a), b / np.linalg.norm(b)
    cross, dot = np.cross(a, b), float(a @ b)
    norm = float(np.linalg.norm(cross))
    if norm < 1e-12:
        if dot > 0:
            return np.eye(3)
        other = np.array([1.0, 0.0, 0.0]) if abs(a[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
        axis = np.cross(a, other)
        return expmap(np.pi * axis / np.linalg.norm(axis))
    return expmap(cross / norm * np.arctan2(norm, dot))


def _align(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Rotation ``Q`` with ``Q @ src_i`` along ``dst_i`` (directions; Kabsch, or minimal)."""
    keep = (np.linalg.norm(src, axis=1) > 1e-9) & (np.linalg.norm(dst, axis=1) > 1e-9)
    src, dst = src[keep], dst[keep]
    if src.shape[0] == 0:
        return np.eye(3)
    src = src / np.linalg.norm(src, axis=1, keepdims=True)
    dst = dst / np.linalg.norm(dst, axis=1, keepdims=True)
    if np.allclose(src, dst, atol=1e-12, rtol=0):
        return np.eye(3)
    h = src.T @ dst
    u, s, vt = np.linalg.svd(h)
    if src.shape[0] == 1 or s[1] < 1e-6 * s[0]:
        return _minimal_rotation(src.sum(axis=0), dst.sum(axis=0))
    d = np.sign(np.linalg.det(vt.T @ u.T))
    return vt.T @ np.diag([1.0, 1.0, d]) @ u.T


@dataclass(frozen=True, eq=False)
class Retarget:
    """A resolved name map from a body plan onto a Kimodo skeleton.

    Attributes
    ----------
    plan : BodyPlan
    skeleton : KimodoSkeleton
    source : (J,) int array
        For each Kimodo joint, the index of its plan joint, or -1 when unmapped.
    align : (J, 3, 3) array
        Rest alignment ``Q_j`` (identity for unmapped joints).
    kimodo_vectors, plan_vectors : (J, 3) arrays
        Rest vector from each mapped joint's nearest mapped ancestor ``A`` to it: Kimodo's
        (m, world = rest frame) and ours (plan units, in ``A``'s plan rest frame); zero
        where unmapped.
    mapped_parent : (J,) int array
        Nearest mapped Kimodo ancestor of each joint, -1 for none.
    """

    plan: BodyPlan
    skeleton: KimodoSkeleton
    source: np.ndarray
    align: np.ndarray
    kimodo_vectors: np.ndarray
    plan_vectors: np.ndarray
    mapped_parent: np.ndarray

    def plan_globals(self, root_orientation: np.ndarray, joint_rotation: np.ndarray) -> np.ndarray:
        """World rotations of the plan's joints after their own DOFs.

        Parameters
        ----------
        root_orientation : (T, 4) array
            ``(w, x, y, z)``.
        joint_rotation : (T, n_plan_joints, 4) array
            Local to each joint's rest frame.

        Returns
        -------
        (T, n_plan_joints, 3, 3) array
        """
        local = quat_to_matrix(quat_normalize(np.asarray(joint_rotation, np.float64)))
        root = quat_to_matrix(quat_normalize(np.asarray(root_orientation, np.float64)))
        offset = quat_to_matrix(
            quat_normalize(np.array([j.offset_quat for j in self.plan.joints], np.float64))
        )
        out = np.empty_like(local)
        parents = self.plan.parent_indices
        for m in range(self.plan.n_joints):
            before = root if parents[m] < 0 else out[:, parents[m]]
            out[:, m] = before @ offset[m] @ local[:, m]
        return out

    def plan_positions(
        self, root_position: np.ndarray, root_orientation: np.ndarray, plan_globals: np.ndarray
    ) -> np.ndarray:
        """Joint positions from the canonical pose (slides are not part of it).

        Parameters
        ----------
        root_position : (T, 3) array
        root_orientation : (T, 4) array
        plan_globals : (T, n_plan_joints, 3, 3) array
            From :meth:`plan_globals`.

        Returns
        -------
        (T, n_plan_joints, 3) array
        """
        parents = self.plan.parent_indices
        offsets = np.array([j.offset_pos for j in self.plan.joints], np.float64)
        root_rot = quat_to_matrix(quat_normalize(np.asarray(root_orientation, np.float64)))
        out = np.empty(plan_globals.shape[:2] + (3,))
        out[:, 0] = root_position + root_rot @ offsets[0]
        for m in range(1, self.plan.n_joints):
            out[:, m] = out[:, parents[m]] + plan_globals[:, parents[m]] @ offsets[m]
        return out

    def kimodo_globals(self, plan_globals: np.ndarray) -> np.ndarray:
        """``(T, J, 3, 3)`` Kimodo global rotations, in the plan's world frame."""
        out = np.empty(plan_globals.shape[:1] + (self.skeleton.n_joints, 3, 3))
        for j in range(self.skeleton.n_joints):
            m = self.source[j]
            if m >= 0:
                out[:, j] = plan_globals[:, m] @ self.align[j]
            else:
                out[:, j] = out[:, self.skeleton.parents[j]]
        return out

    def bound(self, scale: float = 1.0) -> np.ndarray:
        """Largest distance (m) between a mapped Kimodo joint and its plan joint.

        Parameters
        ----------
        scale : float
            Metres per plan length unit.

        Returns
        -------
        (J,) array
            Accumulated rest-pose mismatch from the root (0) down; NaN where unmapped.
        """
        out = np.full(self.skeleton.n_joints, np.nan)
        out[0] = 0.0
        for j in range(1, self.skeleton.n_joints):
            a = self.mapped_parent[j]
            if self.source[j] < 0 or a < 0:
                continue
            gap = self.align[a] @ self.kimodo_vectors[j] - scale * self.plan_vectors[j]
            out[j] = out[a] + float(np.linalg.norm(gap))
        return out


def _resolve(plan: BodyPlan, skeleton: KimodoSkeleton, name_map, where: str) -> np.ndarray:
    names = skeleton.joint_names
    if name_map is None:
        missing = [n for n in names if n not in plan.joint_names]
        if missing:
            raise KimodoError(
                f"{where}: the fitted body plan's joints are not the Kimodo skeleton "
                f"{skeleton.name}'s (missing {missing}); pass a name map ({flag('name_map')}) from "
                f"the plan's joints to {skeleton.name}'s"
            )
        return np.array([plan.joint_names.index(n) for n in names])
    bad_ours = [k for k in name_map if k not in plan.joint_names]
    bad_kimodo = sorted({v for v in name_map.values() if v not in names})
    if bad_ours or bad_kimodo:
        problems = []
        if bad_ours:
            problems.append(f"{bad_ours} are not joints of the body plan ({plan.joint_names})")
        if bad_kimodo:
            problems.append(f"{bad_kimodo} are not joints of {skeleton.name} ({names})")
        raise KimodoError(f"{where}: name map: " + "; ".join(problems))
    values = list(name_map.values())
    dupes = sorted({v for v in values if values.count(v) > 1})
    if dupes:
        raise KimodoError(f"{where}: name map: several plan joints map to {dupes}")
    source = np.full(len(names), -1)
    for ours, theirs in name_map.items():
        source[names.index(theirs)] = plan.joint_names.index(ours)
    if source[0] < 0:
        raise KimodoError(f"{where}: name map: the Kimodo root {names[0]!r} must be mapped")
    return source


def build_retarget(
    plan: BodyPlan,
    skeleton: KimodoSkeleton,
    name_map: Mapping[str, str] | None = None,
    *,
    where: str = "name map",
) -> Retarget:
    """Resolve a name map and compute the rest alignments.

    Parameters
    ----------
    plan : BodyPlan
        The fitted body plan.
    skeleton : KimodoSkeleton
    name_map : mapping, optional
        ``{plan joint: Kimodo joint}``; the Kimodo root must be mapped. Without it the
        plan must have every Kimodo joint name.
    where : str
        Named in error messages (the fit store).

    Returns
    -------
    Retarget

    Raises
    ------
    KimodoError
        Unknown or repeated names, unmapped root, or a map that breaks the tree (a mapped
        Kimodo joint whose nearest mapped Kimodo ancestor is not mapped to an ancestor of
        its plan joint).
    """
    source = _resolve(plan, skeleton, name_map, where)
    n = skeleton.n_joints
    mapped_parent = np.full(n, -1)
    for j in range(1, n):
        up = [a for a in _ancestors(skeleton.parents, j) if source[a] >= 0]
        mapped_parent[j] = up[0] if up else -1
        if source[j] >= 0 and up:
            ours, theirs = source[j], source[up[0]]
            if theirs not in _ancestors(plan.parent_indices, int(ours)):
                raise KimodoError(
                    f"{where}: name map: {skeleton.joint_names[j]!r} hangs below "
                    f"{skeleton.joint_names[up[0]]!r} in {skeleton.name}, but "
                    f"{plan.joint_names[ours]!r} is not below {plan.joint_names[theirs]!r} "
                    "in the body plan"
                )
    rest_k = skeleton.rest_positions
    rest_p, rot_p = forward_kinematics(plan, np.zeros(plan.n_dofs), return_rotations=True)
    kimodo_vectors, plan_vectors = np.zeros((n, 3)), np.zeros((n, 3))
    for j in range(1, n):
        a = mapped_parent[j]
        if source[j] >= 0 and a >= 0:
            kimodo_vectors[j] = rest_k[j] - rest_k[a]
            plan_vectors[j] = rot_p[source[a]].T @ (rest_p[source[j]] - rest_p[source[a]])
    align = np.broadcast_to(np.eye(3), (n, 3, 3)).copy()
    for j in range(n):
        if source[j] < 0:
            continue
        below = [d for d in range(n) if mapped_parent[d] == j and source[d] >= 0]
        align[j] = _align(kimodo_vectors[below], plan_vectors[below])
    return Retarget(plan, skeleton, source, align, kimodo_vectors, plan_vectors, mapped_parent)
