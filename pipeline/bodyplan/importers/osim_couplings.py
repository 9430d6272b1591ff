"""OpenSim functions and coordinate couplers as body-plan functions and couplings.

Helpers of :mod:`pipeline.bodyplan.importers.osim`. :func:`plan_function` turns an OpenSim
``Function`` into the JSON object of :mod:`pipeline.bodyplan.functions` (None for a class
the body plan cannot evaluate exactly); :func:`coupler_table` reads the model's
``CoordinateCouplerConstraint``s: each enforced one with one independent coordinate and
such a function becomes a coupling; every other constraint is reported by name.
"""

from __future__ import annotations

from typing import Any

from pipeline.bodyplan.load_errors import BodyPlanError

__all__ = ["Couplers", "coupler_table", "function_name", "plan_function"]


def _array(getter, n: int) -> list[float]:
    return [float(getter(i)) for i in range(n)]


def plan_function(osim, f) -> dict[str, Any] | None:
    """The body-plan function of OpenSim function ``f`` (None: not expressible)."""
    cls = f.getConcreteClassName()
    if cls == "LinearFunction":
        lf = osim.LinearFunction.safeDownCast(f)
        return {"type": cls, "coefficients": [float(lf.getSlope()), float(lf.getIntercept())]}
    if cls == "Constant":
        return {"type": cls, "value": float(osim.Constant.safeDownCast(f).getValue())}
    if cls in ("SimmSpline", "NaturalCubicSpline"):
        s = osim.SimmSpline.safeDownCast(f)
        n = s.getSize()
        return {"type": "SimmSpline", "x": _array(s.getX, n), "y": _array(s.getY, n)}
    if cls == "PiecewiseLinearFunction":
        p = osim.PiecewiseLinearFunction.safeDownCast(f)
        n = p.getSize()
        return {"type": cls, "x": _array(p.getX, n), "y": _array(p.getY, n)}
    if cls == "PolynomialFunction":
        c = osim.PolynomialFunction.safeDownCast(f).getCoefficients()
        return {"type": cls, "coefficients": _array(c.get, c.size())}
    if cls == "MultiplierFunction":
        m = osim.MultiplierFunction.safeDownCast(f)
        inner = plan_function(osim, m.getFunction())
        if inner is None:
            return None
        return {"type": cls, "function": inner, "scale": float(m.getScale())}
    return None


def function_name(osim, f) -> str:
    """``f``'s class, with the inner class of a ``MultiplierFunction``."""
    cls = f.getConcreteClassName()
    if cls == "MultiplierFunction":
        inner = osim.MultiplierFunction.safeDownCast(f).getFunction()
        return f"{cls} of {function_name(osim, inner)}"
    return cls


class Couplers:
    """The model's constraints, sorted into couplings and the rest.

    Attributes
    ----------
    couplings : dict
        Dependent coordinate -> ``(independent, function JSON, constraint name)``, in an
        order where an independent coordinate that is itself dependent comes first.
    records : list of dict
        One per constraint: ``constraint``, ``class``, and ``dependent``/``independent``
        and ``expressed`` (True for a coupling), else ``reason``.
    warnings : list of str
        One per enforced constraint the plan does not express.
    """

    def __init__(self) -> None:
        self.couplings: dict[str, tuple[str, dict[str, Any], str]] = {}
        self.records: list[dict[str, Any]] = []
        self.warnings: list[str] = []


def _scale_factor(osim, cc) -> float:
    return float(osim.PropertyHelper.getValueDouble(cc.getPropertyByName("scale_factor")))


def coupler_table(osim, model, file: str, strict: bool) -> Couplers:
    """Read every constraint of ``model`` (see :class:`Couplers`).

    Raises
    ------
    BodyPlanError
        ``strict`` and an enforced constraint the plan cannot express.
    """
    out = Couplers()
    found: dict[str, tuple[str, dict[str, Any], str]] = {}
    for c in model.getConstraintSet():
        name, cls = c.getName(), c.getConcreteClassName()
        record: dict[str, Any] = {"constraint": name, "class": cls}
        out.records.append(record)
        enforced = bool(c.get_isEnforced())
        cc = osim.CoordinateCouplerConstraint.safeDownCast(c)
        reason = None
        if not enforced:
            record["reason"] = "not enforced (OpenSim ignores it too)"
            continue
        if cc is None:
            reason = "not a coordinate coupling; the body plan has no closed loops"
        else:
            ind = cc.getIndependentCoordinateNames()
            names = [ind.get(i) for i in range(ind.getSize())]
            dep = cc.getDependentCoordinateName()
            record.update(dependent=dep, independent=names)
            fn = plan_function(osim, cc.getFunction())
            if len(names) != 1:
                reason = f"{len(names)} independent coordinates; a coupling takes one"
            elif fn is None:
                reason = f"{function_name(osim, cc.getFunction())} has no body-plan function"
            else:
                scale = _scale_factor(osim, cc)
                if scale != 1.0:
                    fn = {"type": "MultiplierFunction", "function": fn, "scale": scale}
                found[dep] = (names[0], fn, name)
                record["expressed"] = True
                continue
        record["reason"] = reason
        text = f'{file}: <{cls} name="{name}">: {reason}; not enforced by the body plan' + (
            f" (coordinate {record['dependent']!r} is fitted as an independent DOF)"
            if "dependent" in record
            else ""
        )
        if strict:
            raise BodyPlanError(file, text.split(": ", 1)[1] + " (strict import refuses it)")
        out.warnings.append(text)
    pending = dict(found)
    while pending:  # independents first
        ready = [d for d, (i, _, _) in pending.items() if i not in pending]
        if not ready:
            raise BodyPlanError(file, f"coordinate couplers form a cycle: {', '.join(pending)}")
        for d in ready:
            out.couplings[d] = pending.pop(d)
    return out
