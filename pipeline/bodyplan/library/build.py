"""Helpers that write the shipped plans as version-2 body-plan JSON objects.

A plan is written as rows ``(name, parent, offset_pos, kind fields)``; rows holding
``{s}`` in their names are one side's and are expanded into a left (``_l``) and a
mirrored right (``_r``) copy. Mirroring is through the plan's sagittal plane, given by
the index of the lateral axis: offsets negate that coordinate, rotation axes are mirrored
as pseudovectors (the other two components negate), so equal coordinate values mean the
same anatomical motion on both sides.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["DEG", "Row", "ball", "expand", "fixed", "hinge", "plan_dict", "prismatic", "universal"]

DEG = math.pi / 180.0
#: ``(name, parent, offset_pos, kind fields)``; an optional 5th item: the ``angles`` object.
Row = tuple[Any, ...]


def fixed() -> dict[str, Any]:
    """A fixed joint (a keypoint or marker, no DOF)."""
    return {"kind": "fixed"}


def hinge(axis: Sequence[float], lo_deg: float, hi_deg: float) -> dict[str, Any]:
    """A hinge about ``axis`` with limits in degrees."""
    return {"kind": "hinge", "axis": list(axis), "limits": [lo_deg * DEG, hi_deg * DEG]}


def prismatic(axis: Sequence[float], lo: float, hi: float) -> dict[str, Any]:
    """A slide along ``axis`` with limits in the plan's length unit."""
    return {"kind": "prismatic", "axis": list(axis), "limits": [lo, hi]}


def ball(axis: Sequence[float], swing_deg: Any, twist_deg: float) -> dict[str, Any]:
    """A swing-twist ball: twist about ``axis`` within +-``twist_deg``, a swing cone."""
    swing = [s * DEG for s in swing_deg] if isinstance(swing_deg, list | tuple) else swing_deg * DEG
    return {
        "kind": "ball",
        "axis": list(axis),
        "swing_limit": swing,
        "twist_limit": [-twist_deg * DEG, twist_deg * DEG],
    }


def universal(
    primary: Sequence[float],
    secondary: Sequence[float],
    lim1: Sequence[float],
    lim2: Sequence[float],
) -> dict[str, Any]:
    """Rotation about ``primary`` then ``secondary`` (orthogonal), limits in degrees."""
    return {
        "kind": "universal",
        "axes": [list(primary), list(secondary)],
        "limits": [[lim1[0] * DEG, lim1[1] * DEG], [lim2[0] * DEG, lim2[1] * DEG]],
    }


def _mirror_axis(axis: Sequence[float], lateral: int) -> list[float]:
    return [(c if i == lateral else -c) + 0.0 for i, c in enumerate(axis)]


def _mirror_kind(fields: Mapping[str, Any], lateral: int) -> dict[str, Any]:
    out = dict(fields)
    if "axis" in out and out["kind"] != "prismatic":
        out["axis"] = _mirror_axis(out["axis"], lateral)
    elif "axis" in out:  # a slide's direction is a vector, not a pseudovector
        out["axis"] = [(-c if i == lateral else c) + 0.0 for i, c in enumerate(out["axis"])]
    if "axes" in out:
        out["axes"] = [_mirror_axis(a, lateral) for a in out["axes"]]
    return out


def _joint(name: str, parent: str | None, pos: Sequence[float], kind: Mapping[str, Any]):
    return {
        "name": name,
        "parent": parent,
        "offset_pos": [round(float(c), 6) + 0.0 for c in pos],
        "offset_quat": [1.0, 0.0, 0.0, 0.0],
        **kind,
    }


def expand(rows: Iterable[Row], lateral: int) -> list[dict[str, Any]]:
    """Joint objects of ``rows``; ``{s}`` rows become a left and a mirrored right joint.

    A sided row is expanded where it stands: its left copy, then its right copy. The
    5th item of a row, when present, is the joint's ``angles``: for a sided row the same
    for both sides, or a tuple ``(left angles, right angles)``.
    """
    out: list[dict[str, Any]] = []
    for row in rows:
        name, parent, pos, kind = row[:4]
        angles = row[4] if len(row) > 4 else None
        if "{s}" not in name:
            joint = _joint(name, parent, pos, kind)
            if angles:
                joint["angles"] = angles
            out.append(joint)
            continue
        for side, mirror in (("l", False), ("r", True)):
            p = list(pos)
            if mirror:
                p[lateral] = -p[lateral]
            joint = _joint(
                name.format(s=side),
                parent.format(s=side) if parent else None,
                p,
                _mirror_kind(kind, lateral) if mirror else dict(kind),
            )
            if isinstance(angles, tuple):
                joint["angles"] = angles[1] if mirror else angles[0]
            elif angles:
                joint["angles"] = dict(angles)
            out.append(joint)
    return out


def plan_dict(
    name: str,
    description: str,
    joints: list[dict[str, Any]],
    *,
    unit: str,
    up_axis: str,
    aliases: Mapping[str, Sequence[str]],
    markers: Sequence[str] = (),
    symmetry: Sequence[Sequence[str]] = (),
    fixed_segments: Sequence[str] = (),
) -> dict[str, Any]:
    """A version-2 plan object with its name, unit, up axis, aliases and calibration.

    ``aliases`` (joint -> other names of its keypoint in the conventions the plan is
    for) is kept as the plan's ``x-keypoint-aliases``, which the keypoint matcher reads.
    """
    names = {j["name"] for j in joints}
    unknown = sorted(set(aliases) - names)
    if unknown:  # a typo in a shipped table: fail when the plan is built, not silently
        raise ValueError(f"{name}: aliases name unknown joints {unknown}")
    calibration: dict[str, Any] = {"global_scale": True, "segments": True}
    if markers:
        calibration["markers"] = list(markers)
    if symmetry:
        calibration["symmetry"] = [list(g) for g in symmetry]
    if fixed_segments:
        calibration["fixed"] = list(fixed_segments)
    return {
        "version": 2,
        "fixed_base": False,
        "unit": unit,
        "calibration": calibration,
        "x-name": name,
        "x-description": description,
        "x-up-axis": up_axis,
        "x-keypoint-aliases": {k: list(v) for k, v in aliases.items()},
        "joints": joints,
    }
