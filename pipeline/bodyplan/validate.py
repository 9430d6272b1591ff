"""Field readers for body-plan files: type, range and shape checks with located errors.

Every reader takes a :class:`Where` (file, joint, DOF index) and a field name, and raises
one :class:`~pipeline.bodyplan.load_errors.BodyPlanError` naming all of them. JSON types are
checked strictly: ``true`` is not a number, ``1`` is not a boolean.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from pipeline.bodyplan.load_errors import BodyPlanError

#: Vectors whose norm is within this of 1 are kept as written, so normalizing is
#: idempotent and a saved plan reloads bit-identical.
UNIT_TOLERANCE = 1e-12


@dataclass(frozen=True)
class Where:
    """Location of a value in a body-plan file, used to build error messages."""

    file: str
    joint: str | int | None = None
    dof: int | None = None

    def at(self, *, joint: str | int | None = None, dof: int | None = None) -> Where:
        """Return a location inside this one (a joint, or a DOF of the joint)."""
        return replace(self, joint=joint if joint is not None else self.joint, dof=dof)

    def error(self, field: str | None, reason: str) -> BodyPlanError:
        """Build the error for ``field`` at this location."""
        return BodyPlanError(self.file, reason, joint=self.joint, dof=self.dof, field=field)


def json_type(value: Any) -> str:
    """Name the JSON type of a parsed value, with the value when short."""
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if value is None:
        return "null"
    if isinstance(value, int | float):
        return f"number {value!r}"
    if isinstance(value, str):
        return f"string {value!r}"
    if isinstance(value, list | tuple):
        return f"array of length {len(value)}"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def choices(options: Iterable[str]) -> str:
    """Join options as ``a, b, c`` for messages."""
    return ", ".join(options)


def check_keys(obj: Mapping[str, Any], allowed: Iterable[str], where: Where) -> None:
    """Reject keys not in ``allowed``; keys starting with ``x-`` are always allowed."""
    allowed = tuple(allowed)
    for key in obj:
        if not isinstance(key, str):
            raise where.error(str(key), "keys must be strings")
        if key.startswith("x-") or key in allowed:
            continue
        raise where.error(key, f"unknown key; valid keys: {choices(allowed)} (or x-* comments)")


def require(obj: Mapping[str, Any], key: str, where: Where) -> Any:
    """``obj[key]``, or an error naming the missing required field."""
    if key not in obj:
        raise where.error(key, "missing required field")
    return obj[key]


def as_object(value: Any, where: Where, field: str | None) -> Mapping[str, Any]:
    """Read a JSON object."""
    if not isinstance(value, Mapping):
        raise where.error(field, f"expected an object, got {json_type(value)}")
    return value


def as_list(value: Any, where: Where, field: str) -> list[Any]:
    """Read a JSON array."""
    if not isinstance(value, list | tuple):
        raise where.error(field, f"expected an array, got {json_type(value)}")
    return list(value)


def as_bool(value: Any, where: Where, field: str) -> bool:
    """Read a JSON boolean (``0``/``1`` are not booleans)."""
    if not isinstance(value, bool):
        raise where.error(field, f"expected true or false, got {json_type(value)}")
    return value


def as_str(value: Any, where: Where, field: str, *, nonempty: bool = True) -> str:
    """Read a JSON string (non-empty unless ``nonempty`` is false)."""
    if not isinstance(value, str):
        raise where.error(field, f"expected a string, got {json_type(value)}")
    if nonempty and not value:
        raise where.error(field, "must not be empty")
    return value


def as_number(
    value: Any, where: Where, field: str, *, minimum: float | None = None, what: str = ""
) -> float:
    """Read a finite number as ``float`` (booleans rejected), optionally ``>= minimum``."""
    label = f"{what}: " if what else ""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise where.error(field, f"{label}expected a number, got {json_type(value)}")
    out = float(value)
    if not math.isfinite(out):
        raise where.error(field, f"{label}must be a finite number, got {value!r}")
    if minimum is not None and out < minimum:
        raise where.error(field, f"{label}must be >= {minimum:g}, got {value!r}")
    return out


def as_numbers(value: Any, n: int, where: Where, field: str) -> tuple[float, ...]:
    """Read an array of exactly ``n`` finite numbers."""
    items = as_list(value, where, field)
    if len(items) != n:
        raise where.error(field, f"expected {n} numbers, got {json_type(value)}")
    return tuple(as_number(v, where, field, what=f"item {i}") for i, v in enumerate(items))


def normalized(
    vec: tuple[float, ...], where: Where, field: str, *, what: str = "vector"
) -> tuple[float, ...]:
    """``vec`` scaled to unit length; an error if it is zero.

    Vectors already unit within :data:`UNIT_TOLERANCE` are returned unchanged.
    """
    norm = math.sqrt(math.fsum(v * v for v in vec))
    if norm < 1e-12:
        raise where.error(field, f"{what} {list(vec)} has zero length")
    if abs(norm - 1.0) <= UNIT_TOLERANCE:
        return tuple(vec)
    return tuple(v / norm for v in vec)


def as_axis(value: Any, where: Where, field: str = "axis") -> tuple[float, float, float]:
    """Read a unit 3-vector (normalized; zero rejected)."""
    x, y, z = normalized(as_numbers(value, 3, where, field), where, field, what="axis")
    return (x, y, z)


def as_quat(value: Any, where: Where, field: str = "offset_quat") -> tuple[float, ...]:
    """Read a unit quaternion ``(w, x, y, z)`` (normalized; zero rejected)."""
    return normalized(as_numbers(value, 4, where, field), where, field, what="quaternion")


def as_interval(value: Any, where: Where, field: str, *, what: str = "") -> tuple[float, float]:
    """Read a ``[min, max]`` pair of finite numbers with ``min <= max``."""
    label = f"{what}: " if what else ""
    items = as_list(value, where, field)
    if len(items) != 2:
        raise where.error(field, f"{label}expected [min, max], got {json_type(value)}")
    lo = as_number(items[0], where, field, what=f"{what} min".strip())
    hi = as_number(items[1], where, field, what=f"{what} max".strip())
    if lo > hi:
        raise where.error(field, f"{label}min {lo!r} is greater than max {hi!r}")
    return (lo, hi)


def as_limits(value: Any, where: Where, field: str = "limits") -> tuple[float, float] | None:
    """``[min, max]`` or ``null`` (unbounded)."""
    return None if value is None else as_interval(value, where, field)


def check_inside(
    neutral: float, limits: tuple[float, float] | None, where: Where, field: str = "neutral"
) -> None:
    """Reject a neutral value outside its ``[min, max]`` limits."""
    if limits is not None and not limits[0] <= neutral <= limits[1]:
        raise where.error(
            field, f"{neutral!r} is outside the limits [{limits[0]!r}, {limits[1]!r}]"
        )
