"""Import a URDF robot description as a body plan (parsed by yourdfpy).

``pip install 'kinefit[urdf]'``. What comes across:

- each link becomes a joint (keypoint) at the link's frame, which is its parent joint's
  frame: ``<origin xyz rpy>`` in the parent link's frame (yourdfpy composes the fixed-axis
  roll-pitch-yaw);
- ``revolute`` -> hinge with ``<limit lower upper>``; ``continuous`` -> hinge without limits;
  ``prismatic`` -> slide (the link's node sits below the slide's helper node, named after
  the URDF joint); ``fixed`` -> a fixed keypoint (``merge_fixed=True`` removes those links
  instead, keeping every other keypoint where it was); the ``<axis>`` (default ``1 0 0``)
  is normalized;
- the root link is fixed at the origin (URDF's meaning of no root joint), or free with
  ``fixed_base=False`` (the Unitree files comment out their ``floating`` joint);
- ``<mimic>`` couplings have no body-plan kind: the follower stays an independent DOF and
  a :class:`~pipeline.bodyplan.importers.ConversionWarning` names it (``strict=True``
  refuses the file);
- ``floating`` and ``planar`` joints below the root, unknown joint types, a link with two
  parent joints (a closed loop) or no single root link are refused with the joint's line.

URDF lengths are metres (``x-unit`` ``"m"``), angles radians.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.bodyplan.editing import remove_joint
from pipeline.bodyplan.importers._build import Axis, Fixed, PlanBuilder, Step
from pipeline.bodyplan.importers._xml import XmlIndex, read_xml
from pipeline.bodyplan.importers.finishing import ConversionWarning, finish_plan, starts_with
from pipeline.bodyplan.load_errors import BodyPlanError
from pipeline.bodyplan.model import BodyPlan
from pipeline.kinematics.rotations import matrix_to_quat
from pipeline.provenance.hashing import tree_sha256

__all__ = ["import_plan", "sniff", "import_urdf"]

FORMAT = "urdf"
SUFFIXES = (".urdf", ".xml")
JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")


def _yourdfpy():
    try:
        import yourdfpy
    except ImportError:
        raise ImportError("importing URDF needs yourdfpy: pip install 'kinefit[urdf]'") from None
    return yourdfpy


def _where(index: XmlIndex, tag: str, name: str) -> str:
    for e in index.elements:
        if e.depth == 1 and e.tag == tag and e.attrs.get("name") == name:
            return f'<{tag} name="{name}"> (line {e.line})'
    return f'<{tag} name="{name}">'


def _check_structure(index: XmlIndex, file: str) -> tuple[str, list[Any]]:
    """Check types, loops and the root from the XML itself; return root link and joints."""
    links = [e.attrs.get("name", "") for e in index.elements if e.depth == 1 and e.tag == "link"]
    joints = [e for e in index.elements if e.depth == 1 and e.tag == "joint"]
    parent_of: dict[str, tuple[str, int]] = {}
    for e in joints:
        name, kind = e.attrs.get("name", "?"), e.attrs.get("type")
        if kind not in JOINT_TYPES:
            raise BodyPlanError(
                file,
                f'<joint name="{name}"> (line {e.line}): type {kind!r} is not one of '
                f"{', '.join(JOINT_TYPES)}",
            )
        kids = [
            c.attrs.get("link")
            for c in index.elements
            if c.parent is not None and index.elements[c.parent] is e and c.tag == "child"
        ]
        for child in kids:
            if child in parent_of:
                other, line = parent_of[child]
                raise BodyPlanError(
                    file,
                    f'<joint name="{name}"> (line {e.line}): link {child!r} already has parent '
                    f"joint {other!r} (line {line}): a closed kinematic loop, which a body "
                    "plan (a tree) cannot hold",
                )
            parent_of[str(child)] = (name, e.line)
    roots = [link for link in links if link not in parent_of]
    if len(roots) != 1:
        raise BodyPlanError(
            file,
            f"expected one root link (a link no joint has as child), found {len(roots)}"
            + (f": {', '.join(roots)}" if roots else " (the joints form a cycle)"),
        )
    return roots[0], joints


def import_urdf(
    path: str | Path,
    *,
    fixed_base: bool = True,
    merge_fixed: bool = False,
    strict: bool = False,
    source: str | None = None,
) -> BodyPlan:
    """Import a URDF file.

    Parameters
    ----------
    path : str or Path
    fixed_base : bool
        ``False`` makes the root link free (6 DOFs).
    merge_fixed : bool
        Remove links attached by ``fixed`` joints (their children move up, world rest
        poses kept).
    strict : bool
        Refuse ``<mimic>`` couplings instead of warning.
    source : str, optional
        Name used in messages.

    Returns
    -------
    BodyPlan
        ``x-source`` records the choices and ``engine_configuration`` (URDF joint name ->
        DOF); ``x-unit`` is ``"m"``.

    Raises
    ------
    BodyPlanError
        Malformed XML (line, column), unknown joint types, loops, several roots,
        ``floating``/``planar`` joints below the root; ``<mimic>`` when ``strict``.
    """
    path = Path(path)
    file = source or str(path)
    index = read_xml(path, file, "URDF")
    if index.root.tag != "robot":
        raise BodyPlanError(file, f"root element is <{index.root.tag}>, not <robot>: not URDF")
    root, _ = _check_structure(index, file)
    yourdfpy = _yourdfpy()
    try:
        robot = yourdfpy.URDF.load(
            str(path),
            build_scene_graph=False,
            build_collision_scene_graph=False,
            load_meshes=False,
            load_collision_meshes=False,
        ).robot
    except Exception as exc:  # yourdfpy raises several kinds
        raise BodyPlanError(file, f"yourdfpy cannot read the URDF: {exc}") from None
    children: dict[str, list[Any]] = {}
    for joint in robot.joints:
        children.setdefault(joint.parent, []).append(joint)
    links = [link.name for link in robot.links]
    builder = PlanBuilder(reserved=links)
    node_of = {root: builder.add_body(root, None, [])}
    entries: list[dict[str, Any]] = []
    mimics: list[dict[str, Any]] = []
    queue = [root]
    while queue:
        link = queue.pop(0)
        for joint in children.get(link, []):
            steps = _steps(joint, index, file)
            node_of[joint.child] = builder.add_body(joint.child, node_of[link], steps)
            queue.append(joint.child)
            if joint.type in ("revolute", "continuous", "prismatic"):
                entries.append(
                    {
                        "joint": joint.name,
                        "type": joint.type,
                        "dof": joint.name,
                        "scale": 1.0,
                        "offset": 0.0,
                    }
                )
            if joint.mimic is not None:
                mimics.append(_mimic(joint, index, file, strict))
    extras = {
        "x-unit": "m",
        "x-up-axis": "z",  # the format's convention (pipeline.fit.world_frame)
        "x-source": {
            "format": FORMAT,
            "file": str(path),
            "sha256": tree_sha256(path),
            "parser": f"yourdfpy {getattr(yourdfpy, '__version__', '')}".strip(),
            "root": f"link {root!r} " + ("fixed at the origin" if fixed_base else "free"),
            "continuous": "hinge without limits",
            "mimic": mimics,
            "merge_fixed": merge_fixed,
            "engine_configuration": {"engine": "urdf", "entries": entries},
        },
    }
    plan = finish_plan(builder, fixed_base, robot.name, extras, file)
    if merge_fixed:
        plan = _merge_fixed(plan, robot, root)
    return plan


def _steps(joint, index: XmlIndex, file: str) -> list[Step]:
    origin = np.asarray(joint.origin if joint.origin is not None else np.eye(4), dtype=float)
    steps: list[Step] = [Fixed(origin[:3, 3].copy(), matrix_to_quat(origin[:3, :3]))]
    if joint.type in ("floating", "planar"):
        raise BodyPlanError(
            file,
            f"{_where(index, 'joint', joint.name)}: a {joint.type} joint below the root has no "
            "body-plan kind (use fixed_base=False for a floating root link)",
        )
    if joint.type == "fixed":
        return steps
    axis = np.asarray(joint.axis if joint.axis is not None else (1.0, 0.0, 0.0), dtype=float)
    if np.linalg.norm(axis) < 1e-12:
        raise BodyPlanError(file, f"{_where(index, 'joint', joint.name)}: <axis> has zero length")
    limits = None
    if joint.type != "continuous" and joint.limit is not None:
        lo, hi = joint.limit.lower, joint.limit.upper
        if lo is not None and hi is not None and lo <= hi:
            limits = (float(lo), float(hi))
    dof_type = "slide" if joint.type == "prismatic" else "hinge"
    steps.append(Axis(dof_type, axis / np.linalg.norm(axis), joint.name, limits, joint.name))
    return steps


def _mimic(joint, index: XmlIndex, file: str, strict: bool) -> dict[str, Any]:
    m = joint.mimic
    where = _where(index, "joint", joint.name)
    text = (
        f"{where}: <mimic joint={m.joint!r} multiplier={m.multiplier} offset={m.offset}> "
        f"couples {joint.name!r} to {m.joint!r}; imported as an independent DOF (a body plan "
        "has no coupled joints)"
    )
    if strict:
        raise BodyPlanError(file, text + "; strict import refuses it")
    warnings.warn(f"{file}: {text}", ConversionWarning, stacklevel=4)
    return {
        "joint": joint.name,
        "follows": m.joint,
        "multiplier": float(m.multiplier if m.multiplier is not None else 1.0),
        "offset": float(m.offset if m.offset is not None else 0.0),
    }


def _merge_fixed(plan: BodyPlan, robot, root: str) -> BodyPlan:
    fixed = [j.child for j in robot.joints if j.type == "fixed" and j.child != root]
    for name in fixed:
        plan = remove_joint(plan, name)
    return plan


def sniff(path: str | Path) -> bool:
    """True when the file's first element is URDF (``<robot>``)."""
    return starts_with(path, "<robot")


#: The format contract's call (:mod:`pipeline.formats.contract`).
import_plan = import_urdf
