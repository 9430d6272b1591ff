"""Coupling functions checked against OpenSim's own ``calcValue`` and ``calcDerivative``."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.bodyplan import BodyPlanError
from pipeline.bodyplan.functions import Function, evaluate, function_to_dict, parse_function
from pipeline.bodyplan.validate import Where

from .importers.models import OSIM, need

osim = need("opensim", "osim")
osim.Logger.setLevelString("error")


def _derivative(f, x: float) -> float:
    order = osim.StdVectorInt()
    order.push_back(0)
    return f.calcDerivative(order, osim.Vector(1, float(x)))


def _opensim(f, xs):
    values = np.array([f.calcValue(osim.Vector(1, float(x))) for x in xs])
    return values, np.array([_derivative(f, x) for x in xs])


def _knots(f, cls: str, x, y):
    for a, b in zip(x, y, strict=True):
        f.addPoint(float(a), float(b))
    return f, Function(cls, x=tuple(map(float, x)), y=tuple(map(float, y)))


def _samples(rng, x):
    """Inside, outside, on and next to every knot (the end-knot snap and the bisection)."""
    x = np.asarray(x)
    return np.concatenate([rng.uniform(x[0] - 1, x[-1] + 1, 60), x, x + 1e-14, x - 1e-13])


@pytest.mark.parametrize("n", [2, 3, 4, 5, 11])
@pytest.mark.parametrize("cls", ["SimmSpline", "NaturalCubicSpline", "PiecewiseLinearFunction"])
def test_knotted_functions_equal_opensim(cls, n, rng):
    x = np.sort(rng.uniform(-2.0, 2.0, n))
    y = rng.normal(size=n)
    # OpenSim reads <NaturalCubicSpline> as a SimmSpline: build it by that name
    made = osim.OpenSimObject.newInstanceOfType(cls)
    target = getattr(osim, made.getConcreteClassName()).safeDownCast(made)
    f, fn = _knots(target, cls, x, y)
    xs = _samples(rng, x)
    value, slope = evaluate(fn, xs)
    want_v, want_d = _opensim(f, xs)
    np.testing.assert_allclose(value, want_v, rtol=0, atol=1e-15 * max(1, np.abs(y).max()))
    np.testing.assert_allclose(slope, want_d, rtol=1e-13, atol=1e-12)


def test_linear_constant_polynomial_multiplier_equal_opensim(rng):
    xs = rng.uniform(-3.0, 3.0, 40)
    coeffs = tuple(rng.normal(size=5))
    inner_x = np.sort(rng.uniform(-3, 3, 6))
    inner_y = rng.normal(size=6)
    spline, spline_fn = _knots(osim.SimmSpline(), "SimmSpline", inner_x, inner_y)
    cases = [
        (osim.LinearFunction(-1.5, 0.25), Function("LinearFunction", coefficients=(-1.5, 0.25))),
        (osim.Constant(0.7), Function("Constant", value=0.7)),
        (
            osim.PolynomialFunction(osim.Vector(list(coeffs))),
            Function("PolynomialFunction", coefficients=coeffs),
        ),
    ]
    for f, fn in cases:
        value, slope = evaluate(fn, xs)
        want_v, want_d = _opensim(f, xs)
        np.testing.assert_allclose(value, want_v, rtol=1e-14, atol=1e-14, err_msg=fn.type)
        np.testing.assert_allclose(slope, want_d, rtol=1e-13, atol=1e-13, err_msg=fn.type)
        assert parse_function(function_to_dict(fn), Where("f.json")) == fn
    # OpenSim's MultiplierFunction is scale * f (a Python-built one crashes OpenSim 4.6)
    fn = Function("MultiplierFunction", scale=2.5, function=spline_fn)
    value, slope = evaluate(fn, xs)
    want_v, want_d = _opensim(spline, xs)
    np.testing.assert_allclose(value, 2.5 * want_v, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(slope, 2.5 * want_d, rtol=1e-15, atol=1e-15)
    assert parse_function(function_to_dict(fn), Where("f.json")) == fn


def test_knee_splines_of_gait2392_equal_opensim():
    model = osim.Model(str(OSIM / "gait2392_thelen2003muscle.osim"))
    joint = osim.CustomJoint.safeDownCast(model.getJointSet().get("knee_r"))
    transform = joint.getSpatialTransform()
    xs = np.linspace(-2.2, 0.3, 301)
    checked = 0
    for i in range(6):
        f = transform.getTransformAxis(i).get_function()
        if f.getConcreteClassName() != "SimmSpline":
            continue
        s = osim.SimmSpline.safeDownCast(f)
        fn = Function(
            "SimmSpline",
            x=tuple(s.getX().get(k) for k in range(s.getSize())),
            y=tuple(s.getY().get(k) for k in range(s.getSize())),
        )
        value, slope = evaluate(fn, xs)
        want_v, want_d = _opensim(f, xs)
        np.testing.assert_allclose(value, want_v, rtol=0, atol=1e-16)
        np.testing.assert_allclose(slope, want_d, rtol=1e-14, atol=1e-15)
        checked += 1
    assert checked == 2  # the tibia's two translations


@pytest.mark.parametrize(
    ("obj", "match"),
    [
        (
            {"type": "Sine"},
            r"field 'function\.type': 'Sine' is not one of LinearFunction, Constant",
        ),
        (
            {"type": "SimmSpline", "x": [0, 1, 2], "y": [0, 1]},
            r"'function\.y': has 2 values for 3 knots",
        ),
        ({"type": "SimmSpline", "x": [0, 0], "y": [0, 1]}, r"strictly increasing"),
        ({"type": "LinearFunction", "coefficients": [1, 2, 3]}, r"\[slope, intercept\]"),
        ({"type": "Constant", "value": 1, "x": [0]}, r"x"),
    ],
)
def test_bad_functions_name_the_field(obj, match):
    with pytest.raises(BodyPlanError, match=match):
        parse_function(obj, Where("plan.json"))
