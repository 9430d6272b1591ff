"""Edit body plans: remove a joint, rename, place several plans into one, re-root.

Every edit returns a new :class:`~pipeline.bodyplan.BodyPlan` (plans are frozen) in the
lowest format version that expresses it (version 2 only while a ball joint remains: other
kinds become the equivalent ``dofs`` lists), and
keeps the plan's ``x-`` extras, with the names an importer's ``engine_configuration``
refers to renamed along.

- :func:`remove_joint` re-parents a joint's children under its parent; their rest offsets
  are composed with the removed joint's (``offset_pos``, ``offset_quat``), so every
  remaining keypoint keeps its world rest position and frame. The removed joint's DOFs are
  frozen at 0 (the rest pose).
- :func:`rename` renames joints (a ball's derived coordinate names follow);
  :func:`place` prefixes every joint and explicit DOF name.
- :func:`combine` puts plans side by side below a fixed ``world`` root: a plan with a free
  base gets three slides and a ball joint in its place (``<prefix>position``,
  ``<prefix>orientation``), a fixed-base plan hangs at its own rest placement.
- :func:`~pipeline.bodyplan.rerooting.reroot` (its own module) makes another joint the
  root where that is well defined.
- :func:`without_limits` drops every DOF limit (QuickIK's plans have none), neutral 0.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pipeline.bodyplan.kinds import derive_dofs
from pipeline.bodyplan.load_errors import BodyPlanError
from pipeline.bodyplan.model import BodyPlan, Dof, Joint, JointKind
from pipeline.kinematics.rotations import quat_multiply, quat_normalize, quat_to_matrix

__all__ = ["combine", "place", "remove_joint", "rename", "without_limits"]


def _plan(template: BodyPlan, joints: Sequence[Joint], **changes: Any) -> BodyPlan:
    if not any(j.kind is not None and j.kind.kind == "ball" for j in joints):
        # fixed, hinge, prismatic and universal kinds are plain dofs lists in version 1
        joints = [dataclasses.replace(j, kind=None) if j.kind is not None else j for j in joints]
    version = 2 if any(j.kind is not None for j in joints) else 1
    fields = {"joints": tuple(joints), "version": version, **changes}
    plan = dataclasses.replace(template, **fields)
    if plan.coupled:
        _check_couplings(plan)
        plan = dataclasses.replace(plan, version=3)
    return plan


def _check_couplings(plan: BodyPlan) -> None:
    """Refuse an edit that leaves a driven axis or coupling naming a missing coordinate."""
    known = set(plan.dof_names)
    missing = set()
    for c in plan.couplings:
        if c.coordinate not in known:
            missing.add(c.coordinate)
        known.add(c.name)
    missing |= {a.coordinate for j in plan.joints for a in j.driven} - known
    if missing:
        raise BodyPlanError(
            plan.source or "<plan>",
            f"the edit leaves coordinates {', '.join(sorted(missing))} named by driven axes "
            "or couplings without a DOF; renaming or removing the coordinates of a coupled "
            "plan is not supported",
        )


def _quat(q: np.ndarray) -> tuple[float, float, float, float]:
    q = quat_normalize(np.asarray(q, dtype=np.float64))
    if q[0] < 0:
        q = -q
    return (float(q[0]), float(q[1]), float(q[2]), float(q[3]))


def _compose(a: Joint, b: Joint) -> tuple[tuple[float, float, float], tuple[float, ...]]:
    """Rest offset of ``b`` re-expressed in ``a``'s parent frame (``a``'s DOFs at 0)."""
    qa = np.asarray(a.offset_quat, dtype=np.float64)
    pos = np.asarray(a.offset_pos) + quat_to_matrix(qa) @ np.asarray(b.offset_pos)
    return (float(pos[0]), float(pos[1]), float(pos[2])), _quat(
        quat_multiply(qa, np.asarray(b.offset_quat, dtype=np.float64))
    )


def remove_joint(plan: BodyPlan, name: str) -> BodyPlan:
    """Remove joint ``name``; its children move to its parent, world rest poses kept.

    Parameters
    ----------
    plan : BodyPlan
    name : str
        The joint to remove. The root can be removed when it has exactly one child (that
        child becomes the root).

    Returns
    -------
    BodyPlan
        Without the joint and its DOFs (frozen at 0).

    Raises
    ------
    BodyPlanError
        Unknown joint, or a root with several (or no) children.
    """
    where = plan.source or "<plan>"
    if name not in plan.joint_names:
        raise BodyPlanError(
            where, f"no joint named {name!r}; joints: {', '.join(plan.joint_names)}", joint=name
        )
    gone = plan.joints[plan.joint_index(name)]
    children = [j for j in plan.joints if j.parent == name]
    if gone.parent is None and len(children) != 1:
        raise BodyPlanError(
            where,
            f"cannot remove the root: it has {len(children)} children (a plan has one root)",
            joint=name,
        )
    out = []
    for joint in plan.joints:
        if joint.name == name:
            continue
        if joint.parent == name:
            pos, quat = _compose(gone, joint)
            joint = dataclasses.replace(joint, parent=gone.parent, offset_pos=pos, offset_quat=quat)  # type: ignore[arg-type]
        out.append(joint)
    return _plan(plan, out)


def _rename_joint(joint: Joint, names: Mapping[str, str], dofs: Mapping[str, str]) -> Joint:
    new_name = names.get(joint.name, joint.name)
    parent = None if joint.parent is None else names.get(joint.parent, joint.parent)
    if joint.kind is not None and joint.kind.kind == "ball":
        new_dofs = derive_dofs(new_name, joint.kind)
    else:
        new_dofs = tuple(
            dataclasses.replace(d, name=dofs.get(d.name, d.name)) if d.name else d
            for d in joint.dofs
        )
    return dataclasses.replace(joint, name=new_name, parent=parent, dofs=new_dofs)


def _dof_map(plan: BodyPlan, renamed: BodyPlan) -> dict[str, str]:
    return {a: b for a, b in zip(plan.dof_names, renamed.dof_names, strict=True) if a != b}


def _rename_extras(extras, joints: Mapping[str, str], dofs: Mapping[str, str]):
    """Follow renames in an importer's ``x-source.engine_configuration``."""
    if not extras or "x-source" not in extras:
        return extras
    source = dict(extras["x-source"])
    config = source.get("engine_configuration")
    if isinstance(config, Mapping):
        entries = []
        for entry in config.get("entries", []):
            entry = dict(entry)
            if "dof" in entry:
                entry["dof"] = dofs.get(entry["dof"], entry["dof"])
            if "node" in entry:
                entry["node"] = joints.get(entry["node"], entry["node"])
            entries.append(entry)
        source["engine_configuration"] = {**config, "entries": entries}
    return {**extras, "x-source": source}


def rename(
    plan: BodyPlan, joints: Mapping[str, str], dofs: Mapping[str, str] | None = None
) -> BodyPlan:
    """Rename joints (and, optionally, explicitly named DOFs).

    Parameters
    ----------
    plan : BodyPlan
    joints : mapping
        Old joint name -> new name; every key must be a joint.
    dofs : mapping, optional
        Old DOF name -> new name, for DOFs with an explicit ``name``.

    Returns
    -------
    BodyPlan

    Raises
    ------
    BodyPlanError
        Unknown names, or new names that collide.
    """
    where = plan.source or "<plan>"
    unknown = [n for n in joints if n not in plan.joint_names]
    if unknown:
        raise BodyPlanError(
            where,
            f"no joint named {', '.join(map(repr, unknown))}; joints: "
            f"{', '.join(plan.joint_names)}",
        )
    dofs = dict(dofs or {})
    out = [_rename_joint(j, joints, dofs) for j in plan.joints]
    names = [j.name for j in out]
    clash = sorted({n for n in names if names.count(n) > 1})
    if clash:
        raise BodyPlanError(where, f"renaming gives duplicate joint names {clash}")
    renamed = _plan(plan, out)
    dof_names = list(renamed.dof_names)
    clash = sorted({n for n in dof_names if dof_names.count(n) > 1})
    if clash:
        raise BodyPlanError(where, f"renaming gives duplicate DOF names {clash}")
    extras = _rename_extras(plan.extras, joints, _dof_map(plan, renamed))
    return dataclasses.replace(renamed, extras=extras)


def place(plan: BodyPlan, prefix: str) -> BodyPlan:
    """Prefix every joint name and every explicit DOF name with ``prefix``.

    Parameters
    ----------
    plan : BodyPlan
    prefix : str
        E.g. ``"mouse1/"`` or ``"robot_"``.

    Returns
    -------
    BodyPlan
    """
    joints = {n: f"{prefix}{n}" for n in plan.joint_names}
    dofs = {d.name: f"{prefix}{d.name}" for j in plan.joints for d in j.dofs if d.name}
    return rename(plan, joints, dofs)


def combine(plans: Sequence[BodyPlan], prefixes: Sequence[str], *, root: str = "world") -> BodyPlan:
    """Put several plans into one, below a fixed root joint ``root`` at the origin.

    Parameters
    ----------
    plans : sequence of BodyPlan
    prefixes : sequence of str
        One per plan, distinct (see :func:`place`).
    root : str
        Name of the new root joint.

    Returns
    -------
    BodyPlan
        ``fixed_base`` true. A free-base plan's root pose becomes DOFs: a joint
        ``<prefix>position`` with slides ``<prefix>x``, ``y``, ``z`` (its keypoint stays at
        the origin), then ``<prefix>orientation``, a ball joint (twist axis z, unbounded)
        whose keypoint is the plan's root position. Slides and swing are exact, but a
        swing near 180 degrees is singular: start fits near the rest orientation.

    Raises
    ------
    BodyPlanError
        Counts that differ, repeated prefixes, or names that still collide.
    """
    if len(plans) != len(prefixes) or not plans:
        raise BodyPlanError("<combine>", f"{len(plans)} plans but {len(prefixes)} prefixes")
    if len(set(prefixes)) != len(prefixes):
        raise BodyPlanError("<combine>", f"prefixes repeat: {list(prefixes)}")
    joints = [Joint(name=root, parent=None)]
    units = {getattr(p, "unit", None) or (p.extras or {}).get("x-unit") for p in plans} - {None}
    for plan, prefix in zip(plans, prefixes, strict=True):
        placed = place(plan, prefix)
        top = placed.joints[0]
        attach = root
        if not plan.fixed_base:
            slides = tuple(
                Dof("slide", axis, name=f"{prefix}{c}")
                for c, axis in zip("xyz", ((1.0, 0, 0), (0, 1.0, 0), (0, 0, 1.0)), strict=True)
            )
            joints.append(Joint(name=f"{prefix}position", parent=root, dofs=slides))
            ball = JointKind(kind="ball", axis=(0.0, 0.0, 1.0), neutral=(0.0, 0.0, 0.0))
            orient = f"{prefix}orientation"
            joints.append(
                Joint(
                    name=orient,
                    parent=f"{prefix}position",
                    kind=ball,
                    dofs=derive_dofs(orient, ball),
                )
            )
            attach = orient
        joints.append(dataclasses.replace(top, parent=attach))
        joints.extend(placed.joints[1:])
    names = [j.name for j in joints]
    clash = sorted({n for n in names if names.count(n) > 1})
    if clash:
        raise BodyPlanError("<combine>", f"joint names collide after prefixing: {clash}")
    extras: dict[str, Any] = {"x-combined": [p.name or p.source or "" for p in plans]}
    if len(units) == 1:
        extras["x-unit"] = units.pop()
    template = BodyPlan(joints=(), fixed_base=True, name="+".join(prefixes))
    return _plan(template, joints, extras=extras)


def without_limits(plan: BodyPlan) -> BodyPlan:
    """The plan with every DOF unbounded and every neutral value 0 (the rest pose).

    Parameters
    ----------
    plan : BodyPlan

    Returns
    -------
    BodyPlan
        Kinded joints become ``dofs`` lists (a ball keeps its kind, without its cone and
        twist limits).
    """
    out = []
    for joint in plan.joints:
        if joint.kind is not None and joint.kind.kind == "ball":
            kind = dataclasses.replace(
                joint.kind, swing_limit=None, twist_limit=None, neutral=(0.0, 0.0, 0.0)
            )
            out.append(dataclasses.replace(joint, kind=kind, dofs=derive_dofs(joint.name, kind)))
            continue
        dofs = tuple(dataclasses.replace(d, limits=None, neutral=0.0) for d in joint.dofs)
        out.append(dataclasses.replace(joint, kind=None, dofs=dofs))
    return _plan(plan, out)
