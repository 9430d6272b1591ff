"""Version-2 joint kinds: parse a kinded joint's fields, derive its DOFs, write them back.

A kinded joint carries ``"kind"`` instead of a ``dofs`` list. Its fields (JSON keys) per
kind; every key is optional except the axis (``axis`` or ``axes``):

========== ================================================================ ===============
kind       fields                                                           coordinates
========== ================================================================ ===============
fixed      (none)                                                           0
hinge      ``axis``, ``limits`` [min, max] rad, ``neutral`` rad              1 hinge
prismatic  ``axis``, ``limits`` [min, max] length, ``neutral`` length        1 slide
ball       ``axis`` (twist), ``swing_limit`` rad (one half-angle or two,    swing_y, swing_z,
           about b1 and b2), ``twist_limit`` [min, max] rad,                 twist
           ``neutral`` [swing_y, swing_z, twist] rad
universal  ``axes`` [primary, secondary], ``limits`` [[min, max], [min,     2 hinges
           max]] rad, ``neutral`` [a, b] rad
========== ================================================================ ===============

Every kind but ``fixed`` also takes ``dof_weight_scaler`` (>= 0, default 1): the
neutral-prior weight scaler of each of its coordinates (the joint-level ``weight_scaler``
stays the keypoint's observation weight). Omitted limits are unbounded; an omitted
``neutral`` is zero (the rest pose).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from pipeline.bodyplan.model import KINDS, Dof, Interval, JointKind, Vec3
from pipeline.bodyplan.validate import (
    UNIT_TOLERANCE,
    Where,
    as_axis,
    as_interval,
    as_limits,
    as_list,
    as_number,
    as_numbers,
    as_str,
    check_inside,
    choices,
    json_type,
    normalized,
    require,
)
from pipeline.kinematics.rotations import orthonormal_basis

__all__ = ["KIND_FIELDS", "KIND_KEYS", "derive_dofs", "kind_to_dict", "parse_kind"]

#: Fields each kind allows besides ``kind`` itself.
KIND_FIELDS: dict[str, tuple[str, ...]] = {
    "fixed": (),
    "hinge": ("axis", "limits", "neutral", "dof_weight_scaler"),
    "prismatic": ("axis", "limits", "neutral", "dof_weight_scaler"),
    "ball": ("axis", "swing_limit", "twist_limit", "neutral", "dof_weight_scaler"),
    "universal": ("axes", "limits", "neutral", "dof_weight_scaler"),
}
#: Every joint-level key that only version 2 knows.
KIND_KEYS: tuple[str, ...] = (
    "kind",
    "axis",
    "axes",
    "limits",
    "swing_limit",
    "twist_limit",
    "neutral",
    "dof_weight_scaler",
)
_REQUIRED = {"hinge": ("axis",), "prismatic": ("axis",), "ball": ("axis",), "universal": ("axes",)}
#: Tolerance of the ball's neutral-inside-the-cone check (rad, relative).
_CONE_TOLERANCE = 1e-9


def parse_kind(joint: Mapping[str, Any], where: Where) -> tuple[JointKind, tuple[Dof, ...]]:
    """Read a kinded joint's fields into a :class:`JointKind` and its derived DOFs.

    Parameters
    ----------
    joint : mapping
        The joint's JSON object (its ``kind`` key is present).
    where : Where
        Location of the joint, for messages.

    Returns
    -------
    kind : JointKind
    dofs : tuple of Dof
        See :func:`derive_dofs`.
    """
    name = as_str(joint["kind"], where, "kind")
    if name not in KINDS:
        raise where.error("kind", f"{name!r} is not one of {choices(KINDS)}")
    allowed = KIND_FIELDS[name]
    for key in joint:
        if key in KIND_KEYS and key != "kind" and key not in allowed:
            raise where.error(
                key, f"not allowed for kind {name!r}; allowed: {choices(allowed) or 'none'}"
            )
    for key in _REQUIRED.get(name, ()):
        require(joint, key, where)
    weight = as_number(joint.get("dof_weight_scaler", 1.0), where, "dof_weight_scaler", minimum=0)
    if name == "fixed":
        kind = JointKind(kind="fixed")
    elif name in ("hinge", "prismatic"):
        kind = _parse_hinge(name, joint, where, weight)
    elif name == "universal":
        kind = _parse_universal(joint, where, weight)
    else:
        kind = _parse_ball(joint, where, weight)
    return kind, derive_dofs(str(where.joint), kind)


def _parse_hinge(name: str, joint: Mapping[str, Any], where: Where, weight: float) -> JointKind:
    axis = as_axis(joint["axis"], where)
    limits = as_limits(joint.get("limits"), where)
    neutral = as_number(joint.get("neutral", 0.0), where, "neutral")
    check_inside(neutral, limits, where)
    return JointKind(
        kind=name,  # type: ignore[arg-type]
        axis=axis,
        limits=limits,
        neutral=(neutral,),
        weight_scaler=weight,
    )


def _parse_universal(joint: Mapping[str, Any], where: Where, weight: float) -> JointKind:
    axes = as_list(joint["axes"], where, "axes")
    if len(axes) != 2:
        raise where.error("axes", f"expected [primary, secondary], got {json_type(axes)}")
    primary = as_axis(axes[0], where, "axes")
    raw = as_numbers(axes[1], 3, where, "axes")
    secondary = normalized(raw, where, "axes", what="secondary axis")
    dot = sum(p * s for p, s in zip(primary, secondary, strict=True))
    if abs(dot) > UNIT_TOLERANCE:
        ortho = tuple(s - dot * p for p, s in zip(primary, secondary, strict=True))
        if math.sqrt(sum(v * v for v in ortho)) < 1e-6:
            raise where.error(
                "axes", f"secondary axis {list(raw)} is parallel to the primary {list(primary)}"
            )
        secondary = normalized(ortho, where, "axes", what="secondary axis")
    sx, sy, sz = secondary
    limits_raw = joint.get("limits")
    limits: tuple[Interval | None, Interval | None] | None = None
    if limits_raw is not None:
        pair = as_list(limits_raw, where, "limits")
        if len(pair) != 2:
            raise where.error(
                "limits", f"expected [[min, max], [min, max]], got {json_type(limits_raw)}"
            )
        limits = (
            None if pair[0] is None else as_interval(pair[0], where, "limits", what="primary"),
            None if pair[1] is None else as_interval(pair[1], where, "limits", what="secondary"),
        )
    neutral = as_numbers(joint.get("neutral", [0.0, 0.0]), 2, where, "neutral")
    for value, lim in zip(neutral, limits or (None, None), strict=True):
        check_inside(value, lim, where)
    return JointKind(
        kind="universal",
        axes=(primary, (sx, sy, sz)),
        limits=limits,
        neutral=neutral,
        weight_scaler=weight,
    )


def _parse_ball(joint: Mapping[str, Any], where: Where, weight: float) -> JointKind:
    axis = as_axis(joint["axis"], where)
    swing: tuple[float, float] | None = None
    raw = joint.get("swing_limit")
    if raw is not None:
        if isinstance(raw, list | tuple):
            if len(raw) != 2:
                raise where.error(
                    "swing_limit", f"expected a half-angle or two, got {json_type(raw)}"
                )
            half = [as_number(v, where, "swing_limit", what=f"item {i}") for i, v in enumerate(raw)]
        else:
            half = [as_number(raw, where, "swing_limit")] * 2
        for value in half:
            if not 0.0 < value <= math.pi:
                raise where.error("swing_limit", f"half-angle {value!r} rad is not in (0, pi]")
        swing = (half[0], half[1])
    twist = as_limits(joint.get("twist_limit"), where, "twist_limit")
    neutral = as_numbers(joint.get("neutral", [0.0, 0.0, 0.0]), 3, where, "neutral")
    if swing is not None:
        radius = (neutral[0] / swing[0]) ** 2 + (neutral[1] / swing[1]) ** 2
        if radius > 1.0 + _CONE_TOLERANCE:
            raise where.error(
                "neutral",
                f"swing ({neutral[0]!r}, {neutral[1]!r}) is outside the swing cone "
                f"with half-angles ({swing[0]!r}, {swing[1]!r}) rad",
            )
    check_inside(neutral[2], twist, where)
    return JointKind(
        kind="ball",
        axis=axis,
        swing_limit=swing,
        twist_limit=twist,
        neutral=neutral,
        weight_scaler=weight,
    )


def _vec(v: np.ndarray) -> Vec3:
    return (float(v[0]), float(v[1]), float(v[2]))


def derive_dofs(joint_name: str, kind: JointKind) -> tuple[Dof, ...]:
    """Derive the scalar coordinates of a kinded joint, in the order they apply.

    Parameters
    ----------
    joint_name : str
        Used to name a ball's coordinates ``<joint>/swing_y``, ``/swing_z``, ``/twist``.
    kind : JointKind
        With unit axes (as :func:`parse_kind` leaves them).

    Returns
    -------
    tuple of Dof
        fixed: none; hinge: one hinge; prismatic: one slide; universal: two hinges
        (primary, secondary); ball: two ``swing`` coordinates about ``b1, b2`` of
        :func:`~pipeline.kinematics.rotations.orthonormal_basis` (unbounded: their cone
        lives on the kind) then a hinge ``twist`` about ``axis``.
    """
    w = kind.weight_scaler
    if kind.kind == "fixed":
        return ()
    if kind.kind in ("hinge", "prismatic"):
        assert kind.axis is not None
        dof_type = "hinge" if kind.kind == "hinge" else "slide"
        limits = kind.limits
        return (Dof(dof_type, kind.axis, kind.neutral[0], limits, w),)  # type: ignore[arg-type]
    if kind.kind == "universal":
        assert kind.axes is not None
        limits_pair = kind.limits or (None, None)
        return tuple(
            Dof("hinge", axis, kind.neutral[i], limits_pair[i], w)  # type: ignore[arg-type]
            for i, axis in enumerate(kind.axes)
        )
    assert kind.axis is not None
    b1, b2 = orthonormal_basis(np.asarray(kind.axis, dtype=np.float64))
    n = kind.neutral
    return (
        Dof("swing", _vec(b1), n[0], None, w, f"{joint_name}/swing_y"),
        Dof("swing", _vec(b2), n[1], None, w, f"{joint_name}/swing_z"),
        Dof("hinge", kind.axis, n[2], kind.twist_limit, w, f"{joint_name}/twist"),
    )


def kind_to_dict(kind: JointKind) -> dict[str, Any]:
    """Return the JSON fields of a kind (``kind`` first), as :func:`parse_kind` reads them."""
    out: dict[str, Any] = {"kind": kind.kind}
    if kind.kind == "fixed":
        return out
    if kind.kind in ("hinge", "prismatic"):
        out["axis"] = list(kind.axis or ())
        out["limits"] = None if kind.limits is None else list(kind.limits)  # type: ignore[arg-type]
        out["neutral"] = kind.neutral[0]
    elif kind.kind == "universal":
        out["axes"] = [list(a) for a in kind.axes or ()]
        out["limits"] = (
            None
            if kind.limits is None
            else [None if lim is None else list(lim) for lim in kind.limits]  # type: ignore[union-attr]
        )
        out["neutral"] = list(kind.neutral)
    else:
        out["axis"] = list(kind.axis or ())
        if kind.swing_limit is not None:
            a, b = kind.swing_limit
            out["swing_limit"] = a if a == b else [a, b]
        if kind.twist_limit is not None:
            out["twist_limit"] = list(kind.twist_limit)
        out["neutral"] = list(kind.neutral)
    if kind.weight_scaler != 1.0:
        out["dof_weight_scaler"] = kind.weight_scaler
    return out
