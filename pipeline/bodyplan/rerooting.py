"""Re-root a body plan: make another joint the root, keeping every world rest pose.

Well defined only when no joint on the path from the old root to the new one (both
included) has DOFs: reversing an edge with DOFs would change which keypoints they move.
The reversed edges' offsets are the inverses of the rest transforms between the joints;
the new root's offset is its world rest pose; a free base stays free, now at the new root.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from pipeline.bodyplan.editing import _plan, _quat
from pipeline.bodyplan.load_errors import BodyPlanError
from pipeline.bodyplan.model import BodyPlan
from pipeline.kinematics.rotations import matrix_to_quat, quat_to_matrix

__all__ = ["reroot", "rest_frames"]


def rest_frames(plan: BodyPlan) -> tuple[np.ndarray, np.ndarray]:
    """World rest position (J, 3) and rotation (J, 3, 3) of every joint frame."""
    pos = np.zeros((plan.n_joints, 3))
    rot = np.zeros((plan.n_joints, 3, 3))
    for i, joint in enumerate(plan.joints):
        r = quat_to_matrix(np.asarray(joint.offset_quat, dtype=np.float64))
        p = plan.parent_indices[i]
        if p < 0:
            pos[i], rot[i] = joint.offset_pos, r
        else:
            pos[i] = pos[p] + rot[p] @ np.asarray(joint.offset_pos)
            rot[i] = rot[p] @ r
    return pos, rot


def reroot(plan: BodyPlan, name: str) -> BodyPlan:
    """Make joint ``name`` the root, keeping every joint's world rest pose.

    Parameters
    ----------
    plan : BodyPlan
    name : str

    Returns
    -------
    BodyPlan
        The new root's offset is its world rest pose; the edges on the path to the old
        root are reversed; a free base stays free (now at the new root).

    Raises
    ------
    BodyPlanError
        Unknown joint, or a joint with DOFs on the path (the reversal would change which
        keypoints they move).
    """
    where = plan.source or "<plan>"
    if name not in plan.joint_names:
        raise BodyPlanError(where, f"no joint named {name!r}", joint=name)
    index = plan.joint_index(name)
    path = [index]
    while plan.parent_indices[path[-1]] >= 0:
        path.append(int(plan.parent_indices[path[-1]]))
    moving = [plan.joints[i].name for i in path if plan.joints[i].dofs]
    if moving:
        raise BodyPlanError(
            where,
            f"cannot re-root at {name!r}: joints {moving} on the path to the root have DOFs; "
            "reversing them would change which keypoints they move",
            joint=name,
        )
    pos, rot = rest_frames(plan)
    new_parent = {plan.joints[i].name: plan.joints[i].parent for i in range(plan.n_joints)}
    new_parent[name] = None
    for child, parent in zip(path[:-1], path[1:], strict=True):
        new_parent[plan.joints[parent].name] = plan.joints[child].name
    kids: dict[str | None, list[int]] = {}
    for i, joint in enumerate(plan.joints):
        kids.setdefault(new_parent[joint.name], []).append(i)
    order, queue = [], [index]
    while queue:
        i = queue.pop(0)
        order.append(i)
        queue.extend(kids.get(plan.joints[i].name, []))
    on_path = set(path)
    out = []
    for i in order:
        joint = plan.joints[i]
        parent = new_parent[joint.name]
        if i in on_path:
            if parent is None:
                rel_p, rel_r = pos[i], rot[i]
            else:
                k = plan.joint_index(parent)
                rel_p, rel_r = rot[k].T @ (pos[i] - pos[k]), rot[k].T @ rot[i]
            joint = dataclasses.replace(
                joint,
                parent=parent,
                offset_pos=(float(rel_p[0]), float(rel_p[1]), float(rel_p[2])),
                offset_quat=_quat(matrix_to_quat(rel_r)),
            )
        out.append(joint)
    return _plan(plan, out)
