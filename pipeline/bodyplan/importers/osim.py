"""Import an OpenSim ``.osim`` model as a body plan, read through the ``opensim`` package.

``pip install 'kinefit[osim]'``. The model is loaded (and upgraded to the current format)
by OpenSim itself; its bodies, joints, coordinates and markers are read as follows.

- ``ground`` is the fixed root. Each body becomes a joint (keypoint) at the body's origin.
  A joint goes from its parent offset frame to its child offset frame; when its DOFs sit
  away from the child body's origin (the child frame is offset, or the joint translates),
  the joint centre becomes a helper keypoint named after the OpenSim joint.
- ``PinJoint`` -> hinge about the joint frame's z; ``UniversalJoint`` -> hinges x, y;
  ``BallJoint`` / ``GimbalJoint`` -> hinges x, y, z (body-fixed, OpenSim's coordinates);
  ``SliderJoint`` -> slide x; ``PlanarJoint`` -> slides x, y then hinge z; ``FreeJoint`` ->
  slides x, y, z then hinges x, y, z; ``WeldJoint`` -> fixed. ``CustomJoint``: its
  ``SpatialTransform``'s translations (along the parent offset frame's axes) come first,
  then rotation1-3 (each about its axis in the frame the earlier ones turned).
- A transform axis that is a ``LinearFunction`` (or a ``MultiplierFunction`` of one) of a
  single coordinate is exact: the DOF value is ``slope * q + intercept`` and is named
  after the coordinate. A ``Constant`` is a fixed offset. Any other function (the knees'
  ``SimmSpline`` translations and rotations) has no body-plan kind: it is frozen at the
  coordinates' default values with a :class:`ConversionWarning` naming the joint and the
  coordinate, and ``x-source.approximations`` states the largest error that causes at
  the child body's origin over the coordinate's range (``strict=True`` refuses instead).
- Ranges become limits for clamped coordinates; a locked coordinate becomes a DOF limited
  to its default; ``CoordinateCouplerConstraint`` couplings are reported, not enforced.
- Every marker becomes a fixed keypoint on its body (OpenSim users track markers).

``x-unit`` is the model's length unit (``getLengthUnits``); angles are radians.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.bodyplan.errors import BodyPlanError
from pipeline.bodyplan.importers._build import Axis, Fixed, PlanBuilder, Step, compose, inverse
from pipeline.bodyplan.importers._common import ConversionWarning, finish_plan, starts_with
from pipeline.bodyplan.importers._xml import XmlIndex, read_xml
from pipeline.bodyplan.importers.osim_axes import (
    SUPPORTED,
    TransformAxis,
    approximate,
    couplers,
    joint_axes,
    transform,
)
from pipeline.bodyplan.model import BodyPlan
from pipeline.provenance.hashing import tree_sha256

__all__ = ["import_plan", "sniff", "import_osim"]

FORMAT = "osim"
SUFFIXES = (".osim", ".xml")


def _opensim():
    try:
        import opensim
    except ImportError:
        raise ImportError(
            "importing OpenSim models needs opensim: pip install 'kinefit[osim]'"
        ) from None
    return opensim


def import_osim(path: str | Path, *, strict: bool = False, source: str | None = None) -> BodyPlan:
    """Import an OpenSim model.

    Parameters
    ----------
    path : str or Path
    strict : bool
        Refuse transform axes that are not linear in one coordinate (splines) instead of
        freezing them with a warning.
    source : str, optional
        Name used in messages.

    Returns
    -------
    BodyPlan
        Bodies, joint centres (where off the body origin) and markers as keypoints;
        ``x-source`` holds the choices, the ``approximations`` and the
        ``engine_configuration`` (coordinate name -> DOF).

    Raises
    ------
    BodyPlanError
        Malformed XML (line, column), a model OpenSim cannot load, an unsupported joint
        class (with its line), spline-coupled axes when ``strict``.
    """
    path = Path(path)
    file = source or str(path)
    index = read_xml(path, file, "OpenSim model")
    if index.root.tag != "OpenSimDocument":
        raise BodyPlanError(
            file, f"root element is <{index.root.tag}>, not <OpenSimDocument>: not an .osim file"
        )
    for e in index.elements:
        parent = index.elements[e.parent].tag if e.parent is not None else None
        if parent == "objects" and e.tag.endswith("Joint") and e.tag not in SUPPORTED:
            raise BodyPlanError(
                file,
                f'<{e.tag} name="{e.attrs.get("name", "")}"> (line {e.line}): joint type '
                f"{e.tag!r} is not one of {', '.join(SUPPORTED)}",
            )
    osim = _opensim()
    level = osim.Logger.getLevelString()
    osim.Logger.setLevelString("error")
    try:
        model = osim.Model(str(path))
        model.initSystem()
    except Exception as exc:  # OpenSim raises RuntimeError with its own message
        raise BodyPlanError(file, f"OpenSim cannot load the model: {exc}") from None
    finally:
        osim.Logger.setLevelString(level)
    return _convert(osim, model, path, file, index, strict)


def _convert(osim, model, path: Path, file: str, index: XmlIndex, strict: bool) -> BodyPlan:
    coords = {c.getName(): c for c in model.getCoordinateSet()}
    defaults = {n: float(c.getDefaultValue()) for n, c in coords.items()}
    bodies = [b.getName() for b in model.getBodySet()]
    markers = [mk.getName() for mk in model.getMarkerSet()]
    joints = list(model.getJointSet())
    coupled, couplers_named = couplers(osim, model)
    builder = PlanBuilder(reserved=["ground", *bodies, *markers])
    node_of = {"ground": builder.add_body("ground", None, [])}
    used: dict[str, str] = {}
    entries: list[dict[str, Any]] = []
    approximations: list[dict[str, Any]] = []
    pending = list(joints)
    while pending:
        ready = [j for j in pending if j.getParentFrame().findBaseFrame().getName() in node_of]
        if not ready:
            names = ", ".join(j.getName() for j in pending)
            raise BodyPlanError(file, f"joints {names} do not connect to ground (a loop?)")
        for joint in ready:
            pending.remove(joint)
            child = joint.getChildFrame().findBaseFrame().getName()
            axes = joint_axes(osim, joint, index, file)
            steps: list[Step] = [transform(joint.getParentFrame().findTransformInBaseFrame())]
            frozen = []
            for ax in axes:
                if ax.constant is not None:
                    steps.append(ax.step(ax.constant))
                elif ax.linear is not None:
                    steps.append(_dof_step(ax, joint.getName(), coords, used, entries, file))
                else:
                    frozen.append(ax)
                    steps.append(ax.step(ax.value(osim, defaults)))
            steps.append(inverse(transform(joint.getChildFrame().findTransformInBaseFrame())))
            if frozen:
                approximations.append(
                    approximate(
                        osim,
                        joint,
                        axes,
                        frozen,
                        steps,
                        coords,
                        defaults,
                        coupled,
                        index,
                        file,
                        strict,
                    )
                )
            node_of[child] = builder.add_body(
                child, node_of[joint.getParentFrame().findBaseFrame().getName()], steps
            )
    for name in coords:
        if name not in used:
            entries.append({"coordinate": name, "type": "frozen", "value": defaults[name]})
    for mk in model.getMarkerSet():
        frame = mk.getParentFrame()
        at = compose(transform(frame.findTransformInBaseFrame()), Fixed(_vec(mk.get_location())))
        builder.add_point(mk.getName(), node_of[frame.findBaseFrame().getName()], at.pos)
    couplings = [
        {"constraint": c.getName(), "class": c.getConcreteClassName()}
        for c in model.getConstraintSet()
    ]
    for entry in couplings:
        if entry["constraint"] in couplers_named:
            entry["dependent"], entry["independent"] = couplers_named[entry["constraint"]]
    extras = {
        "x-unit": model.getLengthUnits().getAbbreviation(),
        "x-source": {
            "format": FORMAT,
            "file": str(path),
            "sha256": tree_sha256(path),
            "engine": f"opensim {osim.GetVersion()}",
            "root": "ground, fixed",
            "custom_joint": "translations (parent offset frame) then rotation1-3, body-fixed",
            "dof_value": "slope * coordinate + intercept of each linear transform axis",
            "markers": markers,
            "approximations": approximations,
            "constraints_not_enforced": couplings,
            "engine_configuration": {"engine": "opensim", "entries": entries},
        },
    }
    return finish_plan(builder, True, model.getName(), extras, file)


def _vec(v) -> np.ndarray:
    return np.array([v.get(i) for i in range(3)])


def _dof_step(ax: TransformAxis, joint: str, coords, used, entries, file) -> Axis:
    name = ax.coords[0]
    coord = coords[name]
    slope, intercept = ax.linear  # type: ignore[misc]
    dof = name
    if name in used:
        dof = f"{name}@{joint}.{ax.label}"
        warnings.warn(
            f"{file}: coordinate {name!r} drives joint {joint!r} {ax.label} as well as "
            f"{used[name]}; imported as an independent DOF {dof!r}",
            ConversionWarning,
            stacklevel=5,
        )
    else:
        used[name] = f"joint {joint!r} {ax.label}"
    default = slope * float(coord.getDefaultValue()) + intercept
    limits = None
    if bool(coord.get_locked()):
        limits = (default, default)
    elif bool(coord.get_clamped()):
        lo = slope * float(coord.getRangeMin()) + intercept
        hi = slope * float(coord.getRangeMax()) + intercept
        limits = (min(lo, hi), max(lo, hi))
    entries.append(
        {"coordinate": name, "dof": dof, "scale": slope, "offset": intercept, "joint": joint}
    )
    return Axis(ax.kind, ax.axis, dof, limits, node=joint, neutral=default)


def sniff(path: str | Path) -> bool:
    """True when the file's first element is OpenSim (``<OpenSimDocument>``)."""
    return starts_with(path, "<OpenSimDocument")


#: The format contract's call (:mod:`pipeline.formats.contract`).
import_plan = import_osim
