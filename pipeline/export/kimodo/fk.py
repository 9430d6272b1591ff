"""Kimodo's conventions as batched numpy: FK, heading, axes, resampling helpers.

FK (Kimodo format, part 3), rotation matrices acting on column vectors::

    G_root = R_root          G_j = G_parent(j) R_j
    p_root = root_position   p_j = p_parent(j) + G_parent(j) o_j

Heading (section 5.1): ``theta = atan2(d_z, -d_x)`` with ``d = p[right hip] - p[left hip]``;
0 faces +Z and the facing direction is ``(sin theta, 0, cos theta)``.
"""

from __future__ import annotations

import numpy as np

from pipeline.bodyplan import BodyPlan
from pipeline.export.kimodo.skeleton import KimodoSkeleton
from pipeline.kinematics.rotations import (
    quat_normalize,
    quat_to_rotvec,
    swing_twist,
)
from pipeline.tracks.schema import UP_AXES

__all__ = [
    "ball_dofs",
    "heading_angle",
    "kimodo_fk",
    "local_from_global",
    "rot_y",
    "slerp",
    "up_axis_matrix",
]

#: World -> Kimodo rotation for each up axis (a proper rotation taking ``up`` to +Y).
#: ``z`` is MuJoCo's (x forward): ``kimodo = (m_y, m_z, m_x)``.
_UP: dict[str, np.ndarray] = {
    "y": np.eye(3),
    "z": np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]),
    "x": np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]),
}
_FLIP = np.diag([1.0, -1.0, -1.0])  # 180 degrees about +X: -Y -> +Y


def up_axis_matrix(up_axis: str) -> np.ndarray:
    """Rotation ``C`` (3, 3) with ``C @ up == +Y`` for a world whose up is ``up_axis``.

    Parameters
    ----------
    up_axis : {"x", "y", "z", "-x", "-y", "-z"}

    Returns
    -------
    (3, 3) array
        A signed permutation with determinant +1 (handedness is kept).
    """
    if up_axis not in UP_AXES:
        raise ValueError(f"up axis {up_axis!r} is not one of {', '.join(UP_AXES)}")
    base = _UP[up_axis[-1]]
    return _FLIP @ base if up_axis.startswith("-") else base.copy()


def rot_y(theta: np.ndarray | float) -> np.ndarray:
    """Rotations about +Y by ``theta`` (rad), shape ``(..., 3, 3)``."""
    theta = np.asarray(theta, dtype=np.float64)
    c, s = np.cos(theta), np.sin(theta)
    out = np.zeros(theta.shape + (3, 3))
    out[..., 0, 0] = out[..., 2, 2] = c
    out[..., 0, 2] = s
    out[..., 2, 0] = -s
    out[..., 1, 1] = 1.0
    return out


def kimodo_fk(
    skeleton: KimodoSkeleton, local_rot: np.ndarray, root_position: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Kimodo forward kinematics.

    Parameters
    ----------
    skeleton : KimodoSkeleton
    local_rot : (..., J, 3, 3) array
        Local rotation matrices ``R_j`` (the root's is its world orientation).
    root_position : (..., 3) array
        World position of the root (m).

    Returns
    -------
    positions : (..., J, 3) array
    global_rot : (..., J, 3, 3) array
    """
    local_rot = np.asarray(local_rot, dtype=np.float64)
    lead = local_rot.shape[:-3]
    pos = np.empty(lead + (skeleton.n_joints, 3))
    glob = np.empty_like(local_rot)
    pos[..., 0, :] = root_position
    glob[..., 0, :, :] = local_rot[..., 0, :, :]
    for j in range(1, skeleton.n_joints):
        p = skeleton.parents[j]
        pos[..., j, :] = pos[..., p, :] + glob[..., p, :, :] @ skeleton.offsets[j]
        glob[..., j, :, :] = glob[..., p, :, :] @ local_rot[..., j, :, :]
    return pos, glob


def local_from_global(parents: np.ndarray, global_rot: np.ndarray) -> np.ndarray:
    """Local rotations ``R_j = G_parent^T G_j`` (root: ``G_root``), shape ``(..., J, 3, 3)``."""
    parent_rot = global_rot[..., np.maximum(parents, 0), :, :]
    local = np.swapaxes(parent_rot, -1, -2) @ global_rot
    local[..., 0, :, :] = global_rot[..., 0, :, :]
    return local


def heading_angle(skeleton: KimodoSkeleton, positions: np.ndarray) -> np.ndarray:
    """Heading ``atan2(d_z, -d_x)`` (rad) from the hip pair, shape ``positions.shape[:-2]``."""
    right, left = skeleton.hip_indices
    d = positions[..., right, :] - positions[..., left, :]
    return np.arctan2(d[..., 2], -d[..., 0])


def slerp(q0: np.ndarray, q1: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Spherical interpolation of unit quaternions ``(w, x, y, z)``.

    Parameters
    ----------
    q0, q1 : (..., 4) arrays
    u : array broadcastable to ``q0.shape[:-1]``
        0 gives ``q0``, 1 gives ``q1`` (the shorter arc).

    Returns
    -------
    (..., 4) array
    """
    q0, q1 = quat_normalize(np.asarray(q0, np.float64)), quat_normalize(np.asarray(q1, np.float64))
    u = np.asarray(u, dtype=np.float64)[..., None]
    dot = np.sum(q0 * q1, axis=-1, keepdims=True)
    q1 = np.where(dot < 0, -q1, q1)
    dot = np.clip(np.abs(dot), 0.0, 1.0)
    theta = np.arccos(dot)
    sin = np.sin(theta)
    near = sin < 1e-9
    safe = np.where(near, 1.0, sin)
    w0 = np.where(near, 1.0 - u, np.sin((1.0 - u) * theta) / safe)
    w1 = np.where(near, u, np.sin(u * theta) / safe)
    return quat_normalize(w0 * q0 + w1 * q1)


def ball_dofs(plan: BodyPlan, local_quat: np.ndarray) -> np.ndarray:
    """DOF values of a plan of ``ball`` and ``fixed`` joints that give local rotations.

    The inverse of :func:`pipeline.kinematics.joint_rotations_local` for such plans (for
    example :func:`~pipeline.export.kimodo.skeleton.kimodo_body_plan`): each ball
    rotation is split as swing * twist about the joint's axis; rotations of fixed joints
    are ignored.

    Parameters
    ----------
    plan : BodyPlan
    local_quat : (..., n_joints, 4) array
        Local rotations ``(w, x, y, z)``.

    Returns
    -------
    (..., n_dofs) array
        ``swing_y, swing_z, twist`` per ball joint (rad).
    """
    local_quat = np.asarray(local_quat, dtype=np.float64)
    out = np.zeros(local_quat.shape[:-2] + (plan.n_dofs,))
    k = 0
    for j, joint in enumerate(plan.joints):
        if not joint.dofs:
            continue
        if joint.kind is None or joint.kind.kind != "ball":
            raise ValueError(f"joint {joint.name!r}: ball_dofs handles ball and fixed joints only")
        axis = np.asarray(joint.kind.axis)
        swing, twist = swing_twist(local_quat[..., j, :], axis)
        rotvec = quat_to_rotvec(swing)
        out[..., k] = rotvec @ np.asarray(joint.dofs[0].axis)
        out[..., k + 1] = rotvec @ np.asarray(joint.dofs[1].axis)
        out[..., k + 2] = 2.0 * np.arctan2(twist[..., 1:] @ axis, twist[..., 0])
        k += 3
    return out
