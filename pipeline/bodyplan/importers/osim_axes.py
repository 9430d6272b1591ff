"""OpenSim transform axes: joint classes as axis lists, function kinds, spline bounds.

Helpers of :mod:`pipeline.bodyplan.importers.osim`. A joint becomes a list of
:class:`TransformAxis` in the order they apply (a ``CustomJoint``: its translations, then
rotation1-3); each axis is a constant, linear in one coordinate (a DOF), another function
of one coordinate (a driven axis), or not expressible (frozen at the default coordinates
by the importer, which states the error that causes).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from pipeline.bodyplan.importers._build import Fixed, compose
from pipeline.bodyplan.importers._xml import XmlIndex
from pipeline.bodyplan.importers.finishing import ConversionWarning
from pipeline.bodyplan.load_errors import BodyPlanError
from pipeline.kinematics.rotations import rotvec_to_quat

__all__ = ["SUPPORTED", "TransformAxis", "approximate", "couplers", "joint_axes", "transform"]

_SAMPLES = 201
_SIMPLE = {
    # joint class: (type, axis, coordinate index) in the order they apply
    "PinJoint": (("hinge", (0, 0, 1), 0),),
    "UniversalJoint": (("hinge", (1, 0, 0), 0), ("hinge", (0, 1, 0), 1)),
    "BallJoint": (("hinge", (1, 0, 0), 0), ("hinge", (0, 1, 0), 1), ("hinge", (0, 0, 1), 2)),
    "GimbalJoint": (("hinge", (1, 0, 0), 0), ("hinge", (0, 1, 0), 1), ("hinge", (0, 0, 1), 2)),
    "SliderJoint": (("slide", (1, 0, 0), 0),),
    "PlanarJoint": (("slide", (1, 0, 0), 1), ("slide", (0, 1, 0), 2), ("hinge", (0, 0, 1), 0)),
    "FreeJoint": (
        ("slide", (1, 0, 0), 3),
        ("slide", (0, 1, 0), 4),
        ("slide", (0, 0, 1), 5),
        ("hinge", (1, 0, 0), 0),
        ("hinge", (0, 1, 0), 1),
        ("hinge", (0, 0, 1), 2),
    ),
    "WeldJoint": (),
}
SUPPORTED = ("CustomJoint", *_SIMPLE)


def transform(t) -> Fixed:
    """A SimTK Transform as a :class:`Fixed`."""
    q = t.R().convertRotationToQuaternion()
    return Fixed(np.array([t.p().get(i) for i in range(3)]), np.array([q.get(i) for i in range(4)]))


def _rotation(axis: np.ndarray, angle: float) -> Fixed:
    return Fixed(np.zeros(3), rotvec_to_quat(axis * angle))


class TransformAxis:
    """One transform axis: its type, unit axis, coordinates and function."""

    def __init__(self, osim, kind: str, axis, coords: list[str], function, label: str):
        self.kind, self.coords, self.function, self.label = kind, coords, function, label
        vec = np.array([axis.get(i) for i in range(3)] if not isinstance(axis, tuple) else axis)
        self.norm = float(np.linalg.norm(vec))
        self.axis = vec / self.norm if self.norm > 0 else vec
        self.linear: tuple[float, float] | None = None
        self.constant: float | None = None
        cls = function.getConcreteClassName() if function is not None else "identity"
        self.cls = cls
        if function is None:
            self.linear = (1.0, 0.0)
        elif cls == "Constant" or not coords:
            self.constant = float(function.calcValue(osim.Vector(max(len(coords), 1), 0.0)))
        elif cls == "LinearFunction" and len(coords) == 1:
            f = osim.LinearFunction.safeDownCast(function)
            self.linear = (float(f.getSlope()), float(f.getIntercept()))
        elif cls == "MultiplierFunction" and len(coords) == 1:
            f = osim.MultiplierFunction.safeDownCast(function)
            inner = f.getFunction()
            if inner.getConcreteClassName() == "LinearFunction":
                lf = osim.LinearFunction.safeDownCast(inner)
                scale = float(f.getScale())
                self.linear = (scale * float(lf.getSlope()), scale * float(lf.getIntercept()))

    def value(self, osim, values: dict[str, float]) -> float:
        """The axis value (rad or length) at coordinate ``values``."""
        if self.function is None:
            return values[self.coords[0]]
        vec = osim.Vector(max(len(self.coords), 1), 0.0)
        for i, c in enumerate(self.coords):
            vec.set(i, values[c])
        return float(self.function.calcValue(vec))

    def step(self, value: float) -> Fixed:
        """The axis at ``value`` (rad or length) as a fixed transform."""
        if self.kind == "slide":
            return Fixed(self.axis * value)
        return _rotation(self.axis, value)


def joint_axes(osim, joint, index: XmlIndex, file: str) -> list[TransformAxis]:
    """The transform axes of an OpenSim joint, in the order they apply.

    Raises
    ------
    BodyPlanError
        A joint class outside :data:`SUPPORTED` (with its line).
    """
    cls = joint.getConcreteClassName()
    names = [joint.get_coordinates(i).getName() for i in range(joint.numCoordinates())]
    if cls in _SIMPLE:
        return [
            TransformAxis(osim, kind, axis, [names[i]], None, f"{cls} coordinate {names[i]}")
            for kind, axis, i in _SIMPLE[cls]
        ]
    if cls != "CustomJoint":
        line = index.line(cls, joint.getName())
        raise BodyPlanError(
            file,
            f'<{cls} name="{joint.getName()}"> (line {line}): joint type {cls!r} is not one of '
            f"{', '.join(SUPPORTED)}",
        )
    st = osim.CustomJoint.safeDownCast(joint).getSpatialTransform()
    out = []
    for i in (3, 4, 5, 0, 1, 2):
        ta = st.getTransformAxis(i)
        arr = ta.getCoordinateNamesInArray()
        cs = [arr.get(k) for k in range(arr.getSize())]
        kind = "slide" if i >= 3 else "hinge"
        out.append(TransformAxis(osim, kind, ta.getAxis(), cs, ta.get_function(), ta.getName()))
    return out


def couplers(osim, model) -> tuple[dict[str, tuple[str, Any]], dict[str, tuple[str, str]]]:
    """Single-independent coordinate couplers: dependent -> (independent, function)."""
    out, named = {}, {}
    for c in model.getConstraintSet():
        cc = osim.CoordinateCouplerConstraint.safeDownCast(c)
        if cc is None:
            continue
        ind = cc.getIndependentCoordinateNames()
        if ind.getSize() == 1:
            out[cc.getDependentCoordinateName()] = (ind.get(0), cc.getFunction())
            named[c.getName()] = (cc.getDependentCoordinateName(), ind.get(0))
    return out, named


def approximate(osim, joint, axes, frozen, steps, coords, defaults, couplers, index, file, strict):
    """Warn about (or, ``strict``, refuse) frozen axes; return the record of their error.

    The error bound is the largest distance between the child body's origin with the
    exact functions and with the frozen ones, over each frozen coordinate's range (a
    coupled coordinate follows its independent one), in the model's length unit.
    """
    name = joint.getName()
    cls = joint.getConcreteClassName()
    line = index.line(cls, name)
    which = sorted({c for ax in frozen for c in ax.coords})
    detail = ", ".join(f"{ax.label} ({ax.cls} of {', '.join(ax.coords)})" for ax in frozen)
    if strict:
        raise BodyPlanError(
            file,
            f'<{cls} name="{name}"> (line {line}): {detail}: a body plan cannot express it '
            "(a function of several coordinates, a function class without a body-plan "
            "function, or a coordinate that drives no linear axis); strict import refuses it",
        )
    samples = []
    for c in which:
        # a coupled coordinate follows its independent one over that one's range
        driver, function = couplers.get(c, (c, None))
        coord = coords[driver]
        lo, hi = float(coord.getRangeMin()), float(coord.getRangeMax())
        for v in np.linspace(lo, hi, _SAMPLES):
            values = dict(defaults)
            values[c] = float(v if function is None else function.calcValue(osim.Vector(1, v)))
            samples.append(values)
    po, co = steps[0], steps[-1]
    worst = 0.0
    for values in samples:
        exact, approx = po, po
        for ax in axes:
            v = ax.constant if ax.constant is not None else ax.value(osim, values)
            exact = compose(exact, ax.step(v))
            if ax in frozen:
                approx = compose(approx, ax.step(ax.value(osim, defaults)))
            else:
                approx = compose(approx, ax.step(v))
        exact, approx = compose(exact, co), compose(approx, co)
        worst = max(worst, float(np.linalg.norm(exact.pos - approx.pos)))
    rot = max(
        (
            abs(ax.value(osim, s) - ax.value(osim, defaults))
            for ax in frozen
            if ax.kind == "hinge"
            for s in samples
        ),
        default=0.0,
    )
    child = joint.getChildFrame().findBaseFrame().getName()
    message = (
        f'{file}: <{cls} name="{name}"> (line {line}): {detail} frozen at the default of '
        f"coordinate(s) {', '.join(which)}; body {child!r} origin off by up to {worst:.3g} "
        f"(model length unit) over the coordinates' range"
    )
    warnings.warn(message, ConversionWarning, stacklevel=5)
    return {
        "joint": name,
        "coordinates": which,
        "axes": [ax.label for ax in frozen],
        "functions": [ax.cls for ax in frozen],
        "frozen_at": {c: defaults[c] for c in which},
        "child": child,
        "max_origin_error": worst,
        "max_rotation_error_rad": rot,
    }
