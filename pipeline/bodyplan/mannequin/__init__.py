"""The mannequin: a built-in adult humanoid body plan (version 2, joint kinds).

Conventions (Kimodo's): metres, radians, +Y up, facing +Z at rest,
so the character's left is +X. About 1.75 m tall. Every ``offset_quat`` is the identity,
so at rest every joint frame is aligned with the world axes and every axis below is given
in world directions. The root (``pelvis``) sits at the root position: put the root at
``(0, 0.96, 0)`` to stand on the floor ``y = 0``.

Rest pose (all coordinates zero) is an **A-pose**: legs straight down, upper arms 45 deg
below horizontal in the frontal plane, elbows straight with a 10 deg carrying angle,
palms facing the body with the thumbs forward, feet forward. The neutral pose is that
rest pose (every ``neutral`` is zero), a natural relaxed standing pose.

Right-side joints mirror the left ones through the plane ``x = 0``: offsets negate ``x``;
rotation axes are mirrored as pseudovectors (``(x, y, z) -> (x, -y, -z)``) so equal
coordinate values mean the same anatomical motion on both sides.

========== ========= ========== ========================================================
joint      parent    kind       coordinates, limits
========== ========= ========== ========================================================
pelvis     (root)    fixed      none (6 free root DOFs: ``fixed_base`` false)
spine      pelvis    universal  lumbar: flexion about +X -25..45 deg, then side bend
                                about +Z +-25 deg (no twist: the chest carries it)
chest      spine     ball       thoracic: axis +Y, cone 20 deg (side) x 26 deg (flex),
                                twist +-40 deg
neck       chest     ball       axis +Y, cone 34 deg (side) x 52 deg (flex), twist +-69 deg
head       neck      fixed      skull base keypoint
head_top   head      fixed      tip keypoint, 1.75 m
nose       head      fixed      face keypoint (observes the neck twist)
clavicle_* chest     fixed      sternoclavicular keypoint
shoulder_* clavicle  ball       axis along the upper arm, cone 90 deg, twist +-75 deg
elbow_*    shoulder  hinge      flexion 0..150 deg (the forearm comes forward)
wrist_*    elbow     universal  flexion toward the palm -70..80 deg, then deviation
                                -35 (ulnar)..25 (radial, toward the thumb) deg
hand_*     wrist     fixed      hand tip keypoint
thumb_*    wrist     fixed      thumb tip keypoint, forward of the hand
hip_*      pelvis    ball       axis along the thigh, cone 40 deg (ab/adduction) x
                                100 deg (flexion), twist +-40 deg
knee_*     hip       hinge      flexion 0..150 deg (one way: the foot goes back)
ankle_*    knee      universal  plantarflexion -20..50 deg (+), then eversion +-20 deg
toe_*      ankle     fixed      toe tip keypoint
heel_*     ankle     fixed      heel keypoint
========== ========= ========== ========================================================

Named angles (``joint_angle``, :mod:`pipeline.bodyplan.angles`) follow the ISB joint
coordinate systems (Wu et al. 2002, 2005) in the mannequin's axes (x lateral-left, y up,
z forward; every rest frame is world-aligned): Cardan angles, intrinsic, first about the
medio-lateral axis (x), then the floating antero-posterior axis (z), then the long axis
(y), with signs chosen so that ISB's positive directions read positive on both sides:
``hip_*/flexion, adduction, internal_rotation``; ``ankle_*/dorsiflexion, inversion,
internal_rotation``; ``spine, chest, neck/flexion, left_bending, left_rotation``. Hinges
report their coordinate (``knee_*/flexion``, ``elbow_*/flexion``) and the universal wrist
its two (``wrist_*/flexion, radial_deviation``). The shoulders use the same x-z-y Cardan
order (``shoulder_*/flexion, abduction, horizontal_flexion``) instead of ISB's Y-X-Y,
whose gimbal lock sits at the arm-down rest pose; their third angle turns about the
trunk's vertical axis, not the humerus.

``*`` is ``l`` or ``r``: 29 joints (keypoints), 32 DOFs. Every DOF has a keypoint below
it, and the rest-pose keypoint Jacobian has full rank, so every coordinate is observable
at the neutral pose: a ball's twist is seen off its axis (chest: the shoulders; neck: the
nose; shoulder: the wrist through the carrying angle, and the thumb, which also tells it
from elbow flexion; hip: toe and heel). The lumbar spine has no twist because it would
turn about the same vertical line as the chest's twist and could not be told apart.

Regenerate ``configs/bodyplans/mannequin.json`` with
``python -m pipeline.bodyplan.mannequin --write configs/bodyplans/mannequin.json``.
"""

from __future__ import annotations

import math
from typing import Any

from pipeline.bodyplan.io import load_body_plan
from pipeline.bodyplan.model import BodyPlan

__all__ = ["mannequin", "mannequin_dict"]

_DEG = math.pi / 180.0
_X, _Y, _Z = (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)
_NEG_Z = (0.0, 0.0, -1.0)


def _rot_z(v: tuple[float, float, float], angle: float) -> tuple[float, float, float]:
    c, s = math.cos(angle), math.sin(angle)
    return (c * v[0] - s * v[1], s * v[0] + c * v[1], v[2])


def _cross(a: tuple[float, ...], b: tuple[float, ...]) -> tuple[float, float, float]:
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _scale(v: tuple[float, ...], k: float) -> list[float]:
    return [round(k * c, 6) for c in v]


# Left arm directions at rest: upper arm 45 deg below horizontal, forearm 10 deg more lateral.
_UPPER = (math.cos(45 * _DEG), -math.sin(45 * _DEG), 0.0)
_FORE = _rot_z(_UPPER, 10 * _DEG)
_ELBOW_AXIS = _cross(_UPPER, _Z)  # flexion swings the forearm toward +Z
_PALM = _cross(_FORE, _Z)  # palm normal at rest: facing the body
_THUMB = [*_scale(_FORE, 0.06)[:2], 0.05]  # thumb tip: forward of the palm


def _ball(axis, swing, twist) -> dict[str, Any]:
    return {"kind": "ball", "axis": list(axis), "swing_limit": swing, "twist_limit": twist}


def _hinge(axis, lo_deg: float, hi_deg: float) -> dict[str, Any]:
    return {"kind": "hinge", "axis": list(axis), "limits": [lo_deg * _DEG, hi_deg * _DEG]}


def _universal(primary, secondary, lim1, lim2) -> dict[str, Any]:
    return {
        "kind": "universal",
        "axes": [list(primary), list(secondary)],
        "limits": [[lim1[0] * _DEG, lim1[1] * _DEG], [lim2[0] * _DEG, lim2[1] * _DEG]],
    }


_FIXED: dict[str, Any] = {"kind": "fixed"}

#: (name, parent, offset_pos in metres, kind fields): the spine and head.
_CENTRE: tuple[tuple[str, str | None, list[float], dict[str, Any]], ...] = (
    ("pelvis", None, [0.0, 0.0, 0.0], _FIXED),
    ("spine", "pelvis", [0.0, 0.10, 0.0], _universal(_X, _Z, (-25, 45), (-25, 25))),
    ("chest", "spine", [0.0, 0.22, 0.0], _ball(_Y, [20 * _DEG, 26 * _DEG], [-0.7, 0.7])),
    ("neck", "chest", [0.0, 0.22, 0.0], _ball(_Y, [34 * _DEG, 52 * _DEG], [-1.2, 1.2])),
    ("head", "neck", [0.0, 0.10, 0.0], _FIXED),
    ("head_top", "head", [0.0, 0.15, 0.0], _FIXED),
    ("nose", "head", [0.0, 0.03, 0.11], _FIXED),
)
#: Left arm (suffix added, mirrored into the right arm).
_ARM: tuple[tuple[str, str, list[float], dict[str, Any]], ...] = (
    ("clavicle", "chest", [0.02, 0.17, 0.02], _FIXED),
    ("shoulder", "clavicle", [0.16, 0.0, -0.02], _ball(_UPPER, 90 * _DEG, [-1.3, 1.3])),
    ("elbow", "shoulder", _scale(_UPPER, 0.29), _hinge(_ELBOW_AXIS, 0, 150)),
    ("wrist", "elbow", _scale(_FORE, 0.26), _universal(_NEG_Z, _PALM, (-70, 80), (-35, 25))),
    ("hand", "wrist", _scale(_FORE, 0.19), _FIXED),
    ("thumb", "wrist", _THUMB, _FIXED),
)
#: Left leg (suffix added, mirrored into the right leg).
_LEG: tuple[tuple[str, str, list[float], dict[str, Any]], ...] = (
    ("hip", "pelvis", [0.09, -0.06, 0.0], _ball((0.0, -1.0, 0.0), [0.7, 1.75], [-0.7, 0.7])),
    ("knee", "hip", [0.0, -0.41, 0.0], _hinge(_X, 0, 150)),
    ("ankle", "knee", [0.0, -0.41, 0.0], _universal(_X, _Z, (-20, 50), (-20, 20))),
    ("toe", "ankle", [0.0, -0.06, 0.16], _FIXED),
    ("heel", "ankle", [0.0, -0.06, -0.05], _FIXED),
)
_SIDED = {name for name, *_ in _ARM + _LEG}

_TRUNK = ("xzy", ["flexion", "left_bending", "left_rotation"], [1, -1, 1])
#: Named angles (see "Named angles" above): joint -> (sequence or None, names, signs of
#: the left side or of a centre joint, signs of the right side).
_ANGLES: dict[str, tuple[str | None, list[str], list[int], list[int]]] = {
    "spine": (*_TRUNK, _TRUNK[2]),
    "chest": (*_TRUNK, _TRUNK[2]),
    "neck": (*_TRUNK, _TRUNK[2]),
    "shoulder": ("xzy", ["flexion", "abduction", "horizontal_flexion"], [-1, 1, -1], [-1, -1, 1]),
    "elbow": (None, ["flexion"], [1], [1]),
    "wrist": (None, ["flexion", "radial_deviation"], [1, 1], [1, 1]),
    "hip": ("xzy", ["flexion", "adduction", "internal_rotation"], [-1, -1, -1], [-1, 1, 1]),
    "knee": (None, ["flexion"], [1], [1]),
    "ankle": ("xzy", ["dorsiflexion", "inversion", "internal_rotation"], [-1, -1, -1], [-1, 1, 1]),
}


def _angles(name: str, right: bool) -> dict[str, Any]:
    if name not in _ANGLES:
        return {}
    sequence, names, left, right_signs = _ANGLES[name]
    out: dict[str, Any] = {} if sequence is None else {"sequence": sequence}
    return {"angles": {**out, "names": names, "signs": right_signs if right else left}}


def _mirror_kind(fields: dict[str, Any]) -> dict[str, Any]:
    out = dict(fields)
    if "axis" in out:
        out["axis"] = _mirror_axis(out["axis"])
    if "axes" in out:
        out["axes"] = [_mirror_axis(a) for a in out["axes"]]
    return out


def _mirror_axis(axis: list[float]) -> list[float]:
    return [axis[0], -axis[1] + 0.0, -axis[2] + 0.0]  # + 0.0: no negative zeros


def _side(rows, suffix: str, mirror: bool) -> list[dict[str, Any]]:
    out = []
    for name, parent, offset, kind in rows:
        pos = [-offset[0] + 0.0, offset[1], offset[2]] if mirror else list(offset)
        out.append(
            {
                "name": f"{name}_{suffix}",
                "parent": f"{parent}_{suffix}" if parent in _SIDED else parent,
                "offset_pos": pos,
                "offset_quat": [1.0, 0.0, 0.0, 0.0],
                **(_mirror_kind(kind) if mirror else dict(kind)),
                **_angles(name, mirror),
            }
        )
    return out


def mannequin_dict() -> dict[str, Any]:
    """Return the mannequin as a version-2 body-plan JSON object (see the module table).

    Returns
    -------
    dict
        Accepted by :func:`~pipeline.bodyplan.load_body_plan`.
    """
    joints = [
        {
            "name": name,
            "parent": parent,
            "offset_pos": list(offset),
            "offset_quat": [1.0, 0.0, 0.0, 0.0],
            **kind,
            **_angles(name, False),
        }
        for name, parent, offset, kind in _CENTRE
    ]
    for rows in (_ARM, _LEG):
        joints += _side(rows, "l", mirror=False) + _side(rows, "r", mirror=True)
    return {
        "version": 2,
        "fixed_base": False,
        "x-name": "mannequin",
        "x-unit": "m",
        "x-up-axis": "y",
        "joints": joints,
    }


def mannequin() -> BodyPlan:
    """Build the mannequin prefab: a 1.75 m humanoid, metres, +Y up, facing +Z.

    Returns
    -------
    BodyPlan
        29 joints (keypoints), 32 DOFs, free base, version 2. Rest and neutral pose: the
        A-pose of the module docstring.
    """
    return load_body_plan(mannequin_dict(), source="pipeline.bodyplan.mannequin")
