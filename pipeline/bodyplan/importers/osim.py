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
- Each coordinate's first transform axis that is a ``LinearFunction`` (or a
  ``MultiplierFunction`` of one) becomes its DOF, named after it, with value
  ``slope * q + intercept``. Its other axes, linear or not (the knees' ``SimmSpline``
  translations and rotations), become driven axes: functions of the coordinate, exact
  (:mod:`pipeline.bodyplan.functions`). A ``Constant`` is a fixed offset.
- An enforced ``CoordinateCouplerConstraint`` with one independent coordinate is a
  coupling: its dependent coordinate is ``scale_factor * f(independent)``, not a DOF
  (the patellae of Rajagopal's model, Pose2Sim's lumbar vertebrae).
- What the plan cannot express is named in a :class:`ConversionWarning` and recorded in
  ``x-source`` (``strict=True`` refuses it instead): a transform axis of several
  coordinates or of a function class without a body-plan function (frozen at the default
  coordinates; ``x-source.approximations`` states the largest error that causes at the
  child body's origin), a coordinate that drives no linear axis (frozen likewise), and any
  other enforced constraint (a coupler with several independent coordinates, a weld or
  point constraint: not enforced, its coordinates fitted independently).
- Ranges become limits for clamped coordinates; a locked coordinate becomes a DOF limited
  to its default (OpenSim holds it there).
- Every marker becomes a fixed keypoint on its body (OpenSim users track markers).

``x-unit`` is the model's length unit (``getLengthUnits``); angles are radians.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.bodyplan.importers._build import (
    Axis,
    Driven,
    Fixed,
    PlanBuilder,
    Step,
    compose,
    inverse,
)
from pipeline.bodyplan.importers._xml import XmlIndex, read_xml
from pipeline.bodyplan.importers.finishing import ConversionWarning, finish_plan, starts_with
from pipeline.bodyplan.importers.osim_axes import (
    SUPPORTED,
    TransformAxis,
    approximate,
    couplers,
    joint_axes,
    transform,
)
from pipeline.bodyplan.importers.osim_couplings import coupler_table, plan_function
from pipeline.bodyplan.load_errors import BodyPlanError
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
        Refuse what the plan cannot express (see the module docstring) instead of
        freezing or dropping it with a warning.
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


def _primary_axes(joints, index, file, osim, dependent) -> dict[str, tuple]:
    """Per independent coordinate, its first linear axis: ``(joint, label, slope, intercept)``.

    That axis becomes the coordinate's DOF; its other axes are driven by the DOF.
    """
    out: dict[str, tuple] = {}
    for joint in joints:
        for ax in joint_axes(osim, joint, index, file):
            if ax.linear is not None and ax.constant is None:
                c = ax.coords[0]
                if c not in dependent and c not in out:
                    out[c] = (joint.getName(), ax.label, *ax.linear)
    return out


def _unreachable(table, primary, file: str, strict: bool) -> None:
    """Drop couplings whose independent coordinate has no DOF (it drives no linear axis)."""
    changed = True
    while changed:
        changed = False
        for dep, (ind, _, name) in list(table.couplings.items()):
            if ind in primary or ind in table.couplings:
                continue
            text = (
                f'{file}: <CoordinateCouplerConstraint name="{name}">: independent '
                f"coordinate {ind!r} drives no linear transform axis, so the plan has no DOF "
                f"for it; coordinate {dep!r} is fitted as an independent DOF"
            )
            if strict:
                raise BodyPlanError(file, text.split(": ", 1)[1] + " (strict import refuses it)")
            warnings.warn(text, ConversionWarning, stacklevel=5)
            del table.couplings[dep]
            changed = True


def _convert(osim, model, path: Path, file: str, index: XmlIndex, strict: bool) -> BodyPlan:
    coords = {c.getName(): c for c in model.getCoordinateSet()}
    defaults = {n: float(c.getDefaultValue()) for n, c in coords.items()}
    bodies = [b.getName() for b in model.getBodySet()]
    markers = [mk.getName() for mk in model.getMarkerSet()]
    joints = _tree_order(list(model.getJointSet()), file)
    table = coupler_table(osim, model, file, strict)
    for text in table.warnings:
        warnings.warn(text, ConversionWarning, stacklevel=4)
    dependent = table.couplings
    coupled, _ = couplers(osim, model)
    primary = _primary_axes(joints, index, file, osim, dependent)
    _unreachable(table, primary, file, strict)
    primary = _primary_axes(joints, index, file, osim, dependent)
    coupled = {d: v for d, v in coupled.items() if d in dependent}
    builder = PlanBuilder(reserved=["ground", *bodies, *markers])
    node_of = {"ground": builder.add_body("ground", None, [])}
    used: dict[str, str] = {}
    entries: list[dict[str, Any]] = []
    approximations: list[dict[str, Any]] = []
    drives = _Drives(primary, dependent)
    for joint in joints:
        child = joint.getChildFrame().findBaseFrame().getName()
        axes = joint_axes(osim, joint, index, file)
        steps: list[Step] = [transform(joint.getParentFrame().findTransformInBaseFrame())]
        frozen = []
        for ax in axes:
            if ax.constant is not None:
                steps.append(ax.step(ax.constant))
                continue
            single = len(ax.coords) == 1
            if single and primary.get(ax.coords[0], ())[:2] == (joint.getName(), ax.label):
                steps.append(_dof_step(ax, joint.getName(), coords, used, entries))
                continue
            fn = _axis_function(osim, ax) if single else None
            source = drives.source(ax.coords[0]) if single and fn is not None else None
            if source is None:
                frozen.append(ax)
                steps.append(ax.step(ax.value(osim, defaults)))
            else:
                steps.append(Driven(ax.kind, ax.axis, source, fn, node=joint.getName()))
        steps.append(inverse(transform(joint.getChildFrame().findTransformInBaseFrame())))
        if frozen:
            approximations.append(
                approximate(
                    osim, joint, axes, frozen, steps, coords, defaults, coupled, index, file,
                    strict,
                )
            )  # fmt: skip
        node_of[child] = builder.add_body(
            child, node_of[joint.getParentFrame().findBaseFrame().getName()], steps
        )
    builder.couplings = drives.couplings()
    for name in coords:
        if name not in used and name not in dependent:
            entries.append({"coordinate": name, "type": "frozen", "value": defaults[name]})
    for mk in model.getMarkerSet():
        frame = mk.getParentFrame()
        at = compose(transform(frame.findTransformInBaseFrame()), Fixed(_vec(mk.get_location())))
        builder.add_point(mk.getName(), node_of[frame.findBaseFrame().getName()], at.pos)
    extras = {
        "x-unit": model.getLengthUnits().getAbbreviation(),
        "x-up-axis": "y",  # the format's convention (pipeline.fit.world_frame)
        "x-source": {
            "format": FORMAT,
            "file": str(path),
            "sha256": tree_sha256(path),
            "engine": f"opensim {osim.GetVersion()}",
            "root": "ground, fixed",
            "custom_joint": "translations (parent offset frame) then rotation1-3, body-fixed",
            "dof_value": "slope * coordinate + intercept of each coordinate's first linear axis",
            "markers": markers,
            "approximations": approximations,
            "constraints": table.records,
            "constraints_not_enforced": [r for r in table.records if not r.get("expressed")],
            "engine_configuration": {
                "engine": "opensim",
                "entries": entries,
                "dependent": [d for d in dependent if d in coords],
            },
        },
    }
    return finish_plan(builder, True, model.getName(), extras, file)


def _tree_order(joints: list, file: str) -> list:
    """Joints with every parent body placed before its children."""
    done = {"ground"}
    out = []
    pending = list(joints)
    while pending:
        ready = [j for j in pending if j.getParentFrame().findBaseFrame().getName() in done]
        if not ready:
            names = ", ".join(j.getName() for j in pending)
            raise BodyPlanError(file, f"joints {names} do not connect to ground (a loop?)")
        for joint in ready:
            pending.remove(joint)
            done.add(joint.getChildFrame().findBaseFrame().getName())
            out.append(joint)
    return out


def _axis_function(osim, ax: TransformAxis) -> dict[str, Any] | None:
    """The body-plan function of a transform axis (OpenSim normalizes the axis itself)."""
    if ax.function is None:
        return {"type": "LinearFunction", "coefficients": [1.0, 0.0]}
    return plan_function(osim, ax.function)


class _Drives:
    """Names driven axes use for a coordinate, and the couplings that provide them.

    A DOF whose value is the coordinate itself (its first linear axis has slope 1 and
    intercept 0) is named directly; otherwise a coupling ``<coordinate>/coordinate``
    undoes the DOF's slope and intercept. OpenSim's dependent coordinates are couplings.
    """

    def __init__(self, primary, dependent) -> None:
        self.primary, self.dependent = primary, dependent
        self._wrappers: dict[str, dict[str, Any]] = {}

    def source(self, coordinate: str) -> str | None:
        """The plan name holding ``coordinate``'s value (None: nothing holds it)."""
        if coordinate in self.dependent:
            return coordinate
        if coordinate not in self.primary:
            return None  # no linear axis anywhere: no DOF to drive it
        slope, intercept = self.primary[coordinate][2:]
        if (slope, intercept) == (1.0, 0.0):
            return coordinate
        name = f"{coordinate}/coordinate"
        self._wrappers[name] = {
            "name": name,
            "coordinate": coordinate,
            "function": {"type": "LinearFunction", "coefficients": [1 / slope, -intercept / slope]},
        }
        return name

    def couplings(self) -> list[dict[str, Any]]:
        """Every coupling the plan needs, each after the one it depends on."""
        out = []
        for dep, (ind, fn, _) in self.dependent.items():
            out.append({"name": dep, "coordinate": self.source(ind), "function": fn})
        return list(self._wrappers.values()) + out


def _vec(v) -> np.ndarray:
    return np.array([v.get(i) for i in range(3)])


def _dof_step(ax: TransformAxis, joint: str, coords, used, entries) -> Axis:
    """The DOF of a coordinate's first linear axis: ``slope * q + intercept``."""
    name = ax.coords[0]
    coord = coords[name]
    slope, intercept = ax.linear  # type: ignore[misc]
    dof = name
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
