"""Functions of one coordinate, evaluated exactly as OpenSim (Simbody) evaluates them.

A coupled transform axis (:class:`~pipeline.bodyplan.model.DrivenAxis`) and a dependent
coordinate (:class:`~pipeline.bodyplan.model.Coupling`) carry a :class:`Function` of one
coordinate. The JSON object mirrors OpenSim's XML element of the same name:

============================ ======================================= =====================
``type``                     fields                                  value at ``x``
============================ ======================================= =====================
``LinearFunction``           ``coefficients`` [slope, intercept]     ``slope x + intercept``
``Constant``                 ``value``                               ``value``
``PolynomialFunction``       ``coefficients`` (decreasing powers)    Horner's rule
``SimmSpline``               ``x``, ``y`` (>= 2 knots, increasing)   SIMM's cubic spline
``NaturalCubicSpline``       ``x``, ``y``                            as ``SimmSpline``
``PiecewiseLinearFunction``  ``x``, ``y``                            linear between knots
``MultiplierFunction``       ``function`` (one of these), ``scale``  ``scale f(x)``
============================ ======================================= =====================

The spline is OpenSim's ``SimmSpline`` fit: a cubic through every knot whose end
conditions match the third derivative of the cubic through the first (last) four knots
(knot gaps floored at 1e-7), extrapolated linearly with the end slopes outside the knots,
and equal to the end knot's ``y`` within 2e-13 of it. OpenSim reads a
``NaturalCubicSpline`` element as a ``SimmSpline``. A piecewise-linear function is
extrapolated with its end segments' slopes. Knot intervals are found by OpenSim's
bisection, so even derivatives at a knot of a piecewise-linear function agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from pipeline.bodyplan.validate import (
    Where,
    as_list,
    as_number,
    as_object,
    as_str,
    check_keys,
    choices,
    json_type,
    require,
)

__all__ = ["FUNCTION_TYPES", "Function", "evaluate", "function_to_dict", "parse_function"]

#: Function types a body plan may hold (OpenSim class names).
FUNCTION_TYPES: tuple[str, ...] = (
    "LinearFunction",
    "Constant",
    "PolynomialFunction",
    "SimmSpline",
    "NaturalCubicSpline",
    "PiecewiseLinearFunction",
    "MultiplierFunction",
)
_SPLINES = ("SimmSpline", "NaturalCubicSpline")
_KNOTTED = (*_SPLINES, "PiecewiseLinearFunction")
_FIELDS = {
    "LinearFunction": ("coefficients",),
    "Constant": ("value",),
    "PolynomialFunction": ("coefficients",),
    "SimmSpline": ("x", "y"),
    "NaturalCubicSpline": ("x", "y"),
    "PiecewiseLinearFunction": ("x", "y"),
    "MultiplierFunction": ("function", "scale"),
}
# OpenSim's SimmMacros: knot gaps are floored at TINY_NUMBER, and an abscissa within
# ROUNDOFF_ERROR of an end knot takes that knot's value.
_TINY = 1e-7
_ROUNDOFF = 2e-13


@dataclass(frozen=True)
class Function:
    """A function of one coordinate (see the module table).

    Attributes
    ----------
    type : str
        One of :data:`FUNCTION_TYPES`.
    coefficients : tuple of float
        ``LinearFunction``: ``(slope, intercept)``; ``PolynomialFunction``: decreasing
        powers.
    value : float
        ``Constant``'s value.
    x, y : tuple of float
        Knots of a spline or piecewise-linear function (``x`` increasing).
    scale : float
        ``MultiplierFunction``'s factor.
    function : Function or None
        ``MultiplierFunction``'s inner function.
    """

    type: str
    coefficients: tuple[float, ...] = ()
    value: float = 0.0
    x: tuple[float, ...] = ()
    y: tuple[float, ...] = ()
    scale: float = 1.0
    function: Function | None = None

    @cached_property
    def _spline(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return _simm_coefficients(np.asarray(self.x, float), np.asarray(self.y, float))

    @cached_property
    def _slopes(self) -> np.ndarray:
        x, y = np.asarray(self.x, float), np.asarray(self.y, float)
        b = np.empty(len(x))
        b[:-1] = np.diff(y) / np.maximum(_TINY, np.diff(x))
        b[-1] = b[-2]
        return b

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_spline", None)
        state.pop("_slopes", None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    @property
    def is_linear(self) -> bool:
        """A ``LinearFunction`` (or a multiple of one): ``slope x + intercept`` exactly."""
        if self.type == "LinearFunction":
            return True
        return self.type == "MultiplierFunction" and bool(
            self.function is not None and self.function.is_linear
        )

    def linear(self) -> tuple[float, float]:
        """``(slope, intercept)`` of a linear function (:attr:`is_linear`)."""
        if self.type == "LinearFunction":
            return self.coefficients[0], self.coefficients[1]
        assert self.function is not None and self.is_linear
        slope, intercept = self.function.linear()
        return self.scale * slope, self.scale * intercept


def _simm_coefficients(x: np.ndarray, y: np.ndarray):
    """OpenSim's ``SimmSpline::calcCoefficients``: ``(b, c, d)`` per knot."""
    n = len(x)
    b, c, d = np.zeros(n), np.zeros(n), np.zeros(n)
    if n == 2:
        b[:] = (y[1] - y[0]) / max(_TINY, x[1] - x[0])
        return b, c, d
    nm1, nm2 = n - 1, n - 2
    d[0] = max(_TINY, x[1] - x[0])
    c[1] = (y[1] - y[0]) / d[0]
    for i in range(1, nm1):
        d[i] = max(_TINY, x[i + 1] - x[i])
        b[i] = 2.0 * (d[i - 1] + d[i])
        c[i + 1] = (y[i + 1] - y[i]) / d[i]
        c[i] = c[i + 1] - c[i]
    b[0] = -d[0]
    b[nm1] = -d[nm2]
    c[0] = 0.0
    c[nm1] = 0.0
    if n > 3:
        d31 = max(_TINY, x[3] - x[1])
        d20 = max(_TINY, x[2] - x[0])
        d1 = max(_TINY, x[nm1] - x[n - 3])
        d2 = max(_TINY, x[nm2] - x[n - 4])
        d30 = max(_TINY, x[3] - x[0])
        d3 = max(_TINY, x[nm1] - x[n - 4])
        c[0] = c[2] / d31 - c[1] / d20
        c[nm1] = c[nm2] / d1 - c[n - 3] / d2
        c[0] = c[0] * d[0] * d[0] / d30
        c[nm1] = -c[nm1] * d[nm2] * d[nm2] / d3
    for i in range(1, n):
        t = d[i - 1] / b[i - 1]
        b[i] -= t * d[i - 1]
        c[i] -= t * c[i - 1]
    c[nm1] /= b[nm1]
    for i in range(nm2, -1, -1):
        c[i] = (c[i] - d[i] * c[i + 1]) / b[i]
    b[nm1] = (y[nm1] - y[nm2]) / d[nm2] + d[nm2] * (c[nm2] + 2.0 * c[nm1])
    for i in range(nm1):
        b[i] = (y[i + 1] - y[i]) / d[i] - d[i] * (c[i + 1] + 2.0 * c[i])
        d[i] = (c[i + 1] - c[i]) / d[i]
        c[i] *= 3.0
    c[nm1] *= 3.0
    d[nm1] = d[nm2]
    return b, c, d


def _interval(knots: np.ndarray, v: np.ndarray) -> np.ndarray:
    """OpenSim's bisection: ``k`` with ``knots[k] <= v <= knots[k + 1]`` (inside only)."""
    n = len(knots)
    lo = np.zeros(v.shape, np.intp)
    hi = np.full(v.shape, n, np.intp)
    k = (lo + hi) // 2
    done = np.zeros(v.shape, bool)
    for _ in range(2 * n + 2):
        k = np.where(done, k, (lo + hi) // 2)
        below = ~done & (v < knots[k])
        above = ~done & ~below & (v > knots[np.minimum(k + 1, n - 1)])
        hi = np.where(below, k, hi)
        lo = np.where(above, k, lo)
        done |= ~below & ~above
        if done.all():
            break
    return np.minimum(k, n - 2)


def _knotted(fn: Function, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(fn.x, float), np.asarray(fn.y, float)
    n = len(x)
    if fn.type == "PiecewiseLinearFunction":
        b = fn._slopes
        c = d = np.zeros(n)
    else:
        b, c, d = fn._spline
    k = np.zeros(v.shape, np.intp) if n < 3 else _interval(x, np.clip(v, x[0], x[-1]))
    dx = v - x[k]
    value = y[k] + dx * (b[k] + dx * (c[k] + dx * d[k]))
    slope = b[k] + dx * (2.0 * c[k] + 3.0 * dx * d[k])
    first = v < x[0]
    last = v > x[-1]
    at_first = ~first & ~last & (np.abs(v - x[0]) <= _ROUNDOFF)
    at_last = ~first & ~last & ~at_first & (np.abs(v - x[-1]) <= _ROUNDOFF)
    value = np.where(first, y[0] + (v - x[0]) * b[0], value)
    value = np.where(last, y[-1] + (v - x[-1]) * b[-1], value)
    value = np.where(at_first, y[0], np.where(at_last, y[-1], value))
    slope = np.where(first | at_first, b[0], np.where(last | at_last, b[-1], slope))
    return value, slope


def evaluate(fn: Function, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Value and first derivative of ``fn`` at ``v``.

    Parameters
    ----------
    fn : Function
    v : array
        Coordinate values (rad or length units), any shape.

    Returns
    -------
    value, derivative : arrays of ``v``'s shape (float64)
    """
    v = np.asarray(v, dtype=np.float64)
    t = fn.type
    if t == "LinearFunction":
        slope, intercept = fn.coefficients
        return slope * v + intercept, np.full(v.shape, slope)
    if t == "Constant":
        return np.full(v.shape, fn.value), np.zeros(v.shape)
    if t == "PolynomialFunction":
        value = np.zeros(v.shape)
        slope = np.zeros(v.shape)
        for a in fn.coefficients:  # Horner's rule for the value and its derivative
            slope = slope * v + value
            value = value * v + a
        return value, slope
    if t == "MultiplierFunction":
        assert fn.function is not None
        value, slope = evaluate(fn.function, v)
        return fn.scale * value, fn.scale * slope
    return _knotted(fn, v)


# ---------------------------------------------------------------------------- JSON


def _numbers(value: Any, where: Where, field: str, minimum: int) -> tuple[float, ...]:
    items = as_list(value, where, field)
    if len(items) < minimum:
        raise where.error(field, f"needs at least {minimum} numbers, got {json_type(value)}")
    return tuple(as_number(v, where, field, what=f"item {i}") for i, v in enumerate(items))


def parse_function(value: Any, where: Where, field: str = "function") -> Function:
    """Read a function's JSON object (see the module table).

    Raises
    ------
    BodyPlanError
        Unknown type (with the valid ones), a missing or unknown field, knots that are
        not increasing or differ in number.
    """
    obj = as_object(value, where, field)
    kind = as_str(require(obj, "type", where), where, f"{field}.type")
    if kind not in FUNCTION_TYPES:
        raise where.error(f"{field}.type", f"{kind!r} is not one of {choices(FUNCTION_TYPES)}")
    check_keys(obj, ("type", *_FIELDS[kind]), where)
    if kind in ("LinearFunction", "PolynomialFunction"):
        raw = require(obj, "coefficients", where)
        coeffs = _numbers(raw, where, f"{field}.coefficients", 2 if kind[0] == "L" else 1)
        if kind == "LinearFunction" and len(coeffs) != 2:
            raise where.error(f"{field}.coefficients", "expected [slope, intercept]")
        return Function(kind, coefficients=coeffs)
    if kind == "Constant":
        return Function(kind, value=as_number(require(obj, "value", where), where, field))
    if kind == "MultiplierFunction":
        inner = parse_function(require(obj, "function", where), where, f"{field}.function")
        scale = as_number(obj.get("scale", 1.0), where, f"{field}.scale")
        return Function(kind, scale=scale, function=inner)
    x = _numbers(require(obj, "x", where), where, f"{field}.x", 2)
    y = _numbers(require(obj, "y", where), where, f"{field}.y", 2)
    if len(x) != len(y):
        raise where.error(f"{field}.y", f"has {len(y)} values for {len(x)} knots in x")
    if any(b <= a for a, b in zip(x, x[1:], strict=False)):
        raise where.error(f"{field}.x", "knots must be strictly increasing")
    return Function(kind, x=x, y=y)


def function_to_dict(fn: Function) -> dict[str, Any]:
    """The JSON object of ``fn``, as :func:`parse_function` reads it."""
    out: dict[str, Any] = {"type": fn.type}
    if fn.type in ("LinearFunction", "PolynomialFunction"):
        out["coefficients"] = list(fn.coefficients)
    elif fn.type == "Constant":
        out["value"] = fn.value
    elif fn.type == "MultiplierFunction":
        assert fn.function is not None
        out["function"] = function_to_dict(fn.function)
        out["scale"] = fn.scale
    else:
        out["x"], out["y"] = list(fn.x), list(fn.y)
    return out
