"""Shipped human plans: the pose estimators' keypoints and Vicon's Plug-in Gait markers.

Both are built on the mannequin's skeleton (:mod:`pipeline.bodyplan.mannequin`: metres,
+Y up, facing +Z, left at +X, its joint kinds, limits and named ISB angles):

- ``human_pose``: the keypoints of COCO-17, HALPE-26, BODY_25 and BODY_25B (the names of
  :data:`pipeline.tracks.pose_skeletons.SKELETONS`): the mannequin plus eyes, ears and
  small toes, its skull base renamed so that HALPE's and BODY_25B's ``Head`` (the top of
  the head) is not taken for it.
- ``plugin_gait``: Vicon's Plug-in Gait full-body marker set (head, trunk, arms, pelvis,
  legs: ``LFHD`` ... ``RTOE``) and the model's virtual segment points Nexus writes beside
  them (``PELO``, ``LFEA``...), in millimetres, each a fixed joint on its segment at its
  textbook place (calibration fits its offset as a free 3-vector).
"""

from __future__ import annotations

import math
from typing import Any

from pipeline.bodyplan.library.build import Row, expand, fixed, plan_dict
from pipeline.bodyplan.mannequin import mannequin_dict

__all__ = ["human_pose", "plugin_gait"]

_LATERAL = 0  # the mannequin's x axis: left at +X
_SIDES = (("l", "L", "left"), ("r", "R", "right"))


def _base(skull: str) -> list[dict[str, Any]]:
    """The mannequin's joints with its ``head`` (skull base) renamed ``skull``."""
    joints = [dict(j) for j in mannequin_dict()["joints"]]
    for j in joints:
        if j["name"] == "head":
            j["name"] = skull
        if j["parent"] == "head":
            j["parent"] = skull
    return joints


def human_pose() -> dict[str, Any]:
    """A human for the 2D/3D pose estimators' keypoints (COCO-17, HALPE-26, BODY_25(B))."""
    joints = _base("skull_base")
    joints += expand(
        [
            ("eye_{s}", "skull_base", [0.035, 0.06, 0.09], fixed()),
            ("ear_{s}", "skull_base", [0.075, 0.03, 0.0], fixed()),
            ("small_toe_{s}", "ankle_{s}", [0.05, -0.06, 0.13], fixed()),
        ],
        _LATERAL,
    )
    aliases: dict[str, list[str]] = {
        "pelvis": ["CHip", "MidHip", "Hip", "hips", "root", "mid_hip"],
        "head_top": ["Head", "HeadTop", "top_head", "head_end"],
        "neck": ["Neck", "UpperNeck", "thorax"],
        "nose": ["Nose"],
    }
    for s, letter, word in _SIDES:
        aliases[f"toe_{s}"] = [f"{letter}BigToe", f"{word}_big_toe", f"{letter}Toe"]
        aliases[f"small_toe_{s}"] = [f"{letter}SmallToe", f"{word}_small_toe"]
        aliases[f"heel_{s}"] = [f"{letter}Heel", f"{word}_heel"]
    return plan_dict(
        "human_pose",
        "A 1.75 m human for the pose estimators' keypoints: COCO-17 (MMPose, RTMPose, "
        "YOLO-pose, AlphaPose), HALPE-26 and OpenPose BODY_25/BODY_25B; metres, +Y up, "
        "facing +Z (the mannequin's skeleton with eyes, ears and small toes).",
        joints,
        unit="m",
        up_axis="y",
        aliases=aliases,
        markers=[f"{m}_{s}" for m in ("eye", "ear", "small_toe") for s in "lr"] + ["nose"],
    )


def _arm_points() -> tuple[list[float], list[float], list[float]]:
    """The mannequin's elbow (from the shoulder), wrist (from the elbow), forearm dir."""
    d = math.pi / 180.0
    upper = (math.cos(45 * d), -math.sin(45 * d), 0.0)
    c, s = math.cos(10 * d), math.sin(10 * d)
    fore = (c * upper[0] - s * upper[1], s * upper[0] + c * upper[1], 0.0)
    return [0.29 * u for u in upper], [0.26 * f for f in fore], list(fore)


#: Plug-in Gait's model outputs: segment -> (parent joint, origin from it in metres, length
#: in metres, anterior, lateral (PiG's L: the subject's left on both sides but the arms'),
#: proximal axis directions in the mannequin's frame), as Nexus writes them for a standing
#: subject; their exact places are calibrated (they are markers).
_PIG_SEGMENTS: dict[str, tuple[str, tuple[float, ...], float, tuple, tuple, tuple]] = {
    "PEL": ("pelvis", (0, -0.06, 0), 0.125, (0, 0, 1), (1, 0, 0), (0, 1, 0)),
    "TRX": ("chest", (0, 0.17, 0.08), 0.2, (0, 0.2, 1), (-1, 0, 0), (0, -1, 0.2)),
    "HED": ("head", (0, 0, -0.02), 0.25, (0, 0.4, 0.9), (1, 0, 0), (0, 0.9, -0.4)),
    "LFE": ("hip_l", (0, -0.41, 0), 0.41, (0, 0, 1), (1, 0, 0), (0, 1, 0)),
    "RFE": ("hip_r", (0, -0.41, 0), 0.41, (-0.3, 0, 0.95), (0.95, 0, 0.3), (0, 1, 0)),
    "LTI": ("knee_l", (0, -0.41, 0), 0.41, (0.4, 0, 0.9), (0.9, 0, -0.4), (0, 1, 0)),
    "RTI": ("knee_r", (0, -0.41, 0), 0.41, (-0.6, 0, 0.8), (0.8, 0, 0.6), (0, 1, 0)),
    "LFO": ("ankle_l", (0, -0.06, 0.13), 0.2, (0, 1, 0), (0.9, 0, -0.5), (-0.5, 0, -0.9)),
    "RFO": ("ankle_r", (0, -0.06, 0.13), 0.2, (0, 1, 0), (1, 0, 0.2), (0.2, 0, -1)),
    "LTO": ("ankle_l", (0, -0.06, 0.19), 0.07, (0, 1, 0), (0.9, 0, -0.5), (-0.5, 0, -0.9)),
    "RTO": ("ankle_r", (0, -0.06, 0.19), 0.07, (0, 1, 0), (1, 0, 0.2), (0.2, 0, -1)),
    "LCL": ("clavicle_l", (0.16, 0, -0.02), 0.2, (0.5, 0.3, 0.8), (0, 1, -0.3), (-0.9, 0, 0.5)),
    "RCL": ("clavicle_r", (-0.16, 0, -0.02), 0.2, (-0.3, 0.2, 0.9), (0, -1, 0.3), (0.9, 0, 0.3)),
    "LHU": ("shoulder_l", "elbow", 0.29, (0, 0, -1), (-0.7, -0.7, 0), (-0.7, 0.7, 0)),
    "RHU": ("shoulder_r", "elbow", 0.29, (-0.4, 0, -0.9), (-0.7, 0.7, 0), (0.7, 0.7, 0)),
    "LRA": ("elbow_l", "wrist", 0.26, (0.5, -0.5, -0.7), (-0.7, -0.7, 0), (-0.5, 0.5, -0.7)),
    "RRA": ("elbow_r", "wrist", 0.26, (-0.7, -0.5, -0.5), (-0.7, 0.7, 0.2), (0.3, 0.5, -0.8)),
    "LHN": ("wrist_l", "hand", 0.17, (0, 1, 0), (0.8, 0, -0.6), (-0.6, 0.2, -0.8)),
    "RHN": ("wrist_r", "hand", 0.17, (0, 1, 0.2), (0.9, 0, 0.4), (0.3, 0.2, -0.9)),
}


def _pig_outputs(elbow: list[float], wrist: list[float], fore: list[float]) -> list[Row]:
    """Rows of Plug-in Gait's virtual points: ``<seg>O`` and its A, L, P axis points."""
    rows: list[Row] = []
    for seg, (parent, origin, length, *axes) in _PIG_SEGMENTS.items():
        mirror = -1.0 if seg[0] == "R" else 1.0
        if isinstance(origin, str):  # an arm: the next joint of the mannequin's arm
            base = {"elbow": elbow, "wrist": wrist, "hand": [0.17 * c for c in fore]}[origin]
            origin = (mirror * base[0], base[1], base[2])
        rows.append((f"{seg}O", parent, list(origin), fixed()))
        for letter, axis in zip("ALP", axes, strict=True):
            norm = math.sqrt(sum(c * c for c in axis))
            point = [o + length * c / norm for o, c in zip(origin, axis, strict=True)]
            rows.append((f"{seg}{letter}", parent, point, fixed()))
    return rows


def plugin_gait() -> dict[str, Any]:
    """Vicon Plug-in Gait full body, millimetres, +Y up: its 39 markers and 76 model outputs.

    The model outputs are the segments' origins and axis points (``LFEO``, ``LFEA``...)
    that Nexus writes beside the markers; they are markers of the plan too.
    """
    elbow, wrist, fore = _arm_points()
    lateral_elbow = [elbow[0] + 0.025, elbow[1] + 0.025, -0.01]
    markers = [  # (name with {S} the side letter, parent, offset in metres)
        ("{S}FHD", "head", [0.055, 0.07, 0.10]),
        ("{S}BHD", "head", [0.055, 0.08, -0.09]),
        ("{S}SHO", "clavicle_{s}", [0.16, 0.05, -0.02]),
        ("{S}ELB", "shoulder_{s}", lateral_elbow),
        ("{S}WRA", "elbow_{s}", [wrist[0], wrist[1], 0.03]),
        ("{S}WRB", "elbow_{s}", [wrist[0], wrist[1], -0.03]),
        ("{S}FIN", "wrist_{s}", [0.08 * fore[0], 0.08 * fore[1], 0.01]),
        ("{S}ASI", "pelvis", [0.12, 0.03, 0.07]),
        ("{S}PSI", "pelvis", [0.045, 0.05, -0.10]),
        ("{S}THI", "hip_{s}", [0.075, -0.22, 0.02]),
        ("{S}KNE", "hip_{s}", [0.05, -0.41, 0.0]),
        ("{S}TIB", "knee_{s}", [0.06, -0.22, 0.01]),
        ("{S}ANK", "knee_{s}", [0.035, -0.41, -0.01]),
    ]
    joints = _base("head")
    rows = [(name.replace("{S}", "{s}"), parent, pos, fixed()) for name, parent, pos in markers]
    sided = expand(rows, _LATERAL)
    for j in sided:  # name the markers as Vicon does: lFHD -> LFHD
        j["name"] = j["name"][0].upper() + j["name"][1:]
    joints += sided
    joints += expand(
        [
            ("C7", "chest", [0.0, 0.21, -0.08], fixed()),
            ("T10", "chest", [0.0, 0.0, -0.12], fixed()),
            ("CLAV", "chest", [0.0, 0.17, 0.08], fixed()),
            ("STRN", "chest", [0.0, 0.0, 0.12], fixed()),
            ("RBAK", "chest", [-0.08, 0.10, -0.11], fixed()),
            ("SACR", "pelvis", [0.0, 0.04, -0.11], fixed()),
            *_pig_outputs(elbow, wrist, fore),
        ],
        _LATERAL,
    )
    for j in joints:
        j["offset_pos"] = [round(1000.0 * c, 3) + 0.0 for c in j["offset_pos"]]
    aliases: dict[str, list[str]] = {}
    for s, letter, _ in _SIDES:
        aliases[f"heel_{s}"] = [f"{letter}HEE"]
        aliases[f"toe_{s}"] = [f"{letter}TOE"]
    names = [j["name"] for j in joints]
    # SACR is the alternative to the PSIS pair: a file has one or the other, and an
    # unobserved marker cannot be calibrated, so it stays at its template place
    marker_names = [n for n in names if n.upper() == n and n != "SACR"]
    return plan_dict(
        "plugin_gait",
        "Vicon Plug-in Gait full-body markers (LFHD ... RTOE, with C7, T10, CLAV, STRN, "
        "RBAK, SACR) on a 1.75 m skeleton; millimetres, +Y up, facing +Z.",
        joints,
        unit="mm",
        up_axis="y",
        aliases=aliases,
        markers=[*marker_names, "heel_l", "heel_r", "toe_l", "toe_r"],
    )
