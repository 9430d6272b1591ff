"""Shipped 3D mammal plans: a quadruped (SuperAnimal names), a macaque and a side-view rodent.

Frames: x forward, +Z up, the animal's left at +y; metres. Limbs hang straight down at
rest; hips and shoulders are balls, knees and elbows hinges about the lateral axis, the
spine and tail universal joints (yaw then pitch), so each bend is a named angle.
"""

from __future__ import annotations

from typing import Any

from pipeline.bodyplan.library.build import ball, expand, fixed, hinge, plan_dict, universal

__all__ = ["macaque", "quadruped", "rodent_side"]

_X, _Y, _Z = (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)
_DOWN = (0.0, 0.0, -1.0)
_LATERAL = 1
_YAW_PITCH = {"names": ["yaw", "pitch"]}


def _bend(yaw: float, pitch: float) -> dict[str, Any]:
    return universal(_Z, _Y, (-yaw, yaw), (-pitch, pitch))


def _limb(prefix: str, parent: str, at: list[float], upper: float, lower: float, knee: tuple):
    """Rows of a leg: ball at the top, a hinge in the middle, a fixed tip."""
    return [
        (f"{prefix}_thigh_{{s}}", parent, at, ball(_DOWN, [30, 80], 30)),
        (f"{prefix}_knee_{{s}}", f"{prefix}_thigh_{{s}}", [0, 0, -upper], hinge(_Y, *knee)),
        (f"{prefix}_paw_{{s}}", f"{prefix}_knee_{{s}}", [0, 0, -lower], fixed()),
    ]


def quadruped() -> dict[str, Any]:
    """A dog-sized quadruped with DeepLabCut's SuperAnimal-Quadruped keypoints (39)."""
    rows = [
        ("back_middle", None, [0, 0, 0], fixed()),
        ("back_base", "back_middle", [0.2, 0, 0], _bend(30, 30), _YAW_PITCH),
        ("neck_base", "back_base", [0.08, 0, 0.04], _bend(60, 60), _YAW_PITCH),
        ("neck_end", "neck_base", [0.15, 0, 0.15], _bend(40, 50), _YAW_PITCH),
        ("nose", "neck_end", [0.18, 0, -0.04], fixed()),
        ("upper_jaw", "neck_end", [0.15, 0, -0.05], fixed()),
        ("lower_jaw", "neck_end", [0.13, 0, -0.08], fixed()),
        ("mouth_end_{s}", "neck_end", [0.09, 0.03, -0.07], fixed()),
        ("eye_{s}", "neck_end", [0.08, 0.035, 0.0], fixed()),
        ("earbase_{s}", "neck_end", [0.02, 0.05, 0.03], fixed()),
        ("earend_{s}", "neck_end", [0.0, 0.07, 0.11], fixed()),
        ("antler_base_{s}", "neck_end", [0.04, 0.03, 0.05], fixed()),
        ("antler_end_{s}", "neck_end", [0.0, 0.12, 0.25], fixed()),
        ("throat_base", "back_base", [0.12, 0, -0.12], fixed()),
        ("throat_end", "neck_end", [0.05, 0, -0.08], fixed()),
        *_limb("front", "back_base", [0.0, 0.08, -0.12], 0.2, 0.2, (-120, 30)),
        ("belly_bottom", "back_middle", [0, 0, -0.18], fixed()),
        ("body_middle_{s}", "back_middle", [0, 0.12, -0.08], fixed()),
        ("back_end", "back_middle", [-0.2, 0, 0], _bend(30, 30), _YAW_PITCH),
        ("tail_base", "back_end", [-0.05, 0, 0], _bend(90, 90), _YAW_PITCH),
        ("tail_end", "tail_base", [-0.3, 0, 0], fixed()),
        *_limb("back", "back_end", [0.0, 0.08, -0.1], 0.22, 0.22, (-30, 120)),
    ]
    aliases: dict[str, list[str]] = {"neck_end": ["head"], "back_base": ["withers"]}
    for s, word in (("l", "left"), ("r", "right")):
        for end in ("front", "back"):
            aliases[f"{end}_thigh_{s}"] = [f"{end}_{word}_thai", f"{end}_{word}_thigh"]
    return plan_dict(
        "quadruped",
        "A dog-sized quadruped with DeepLabCut SuperAnimal-Quadruped keypoints (nose, jaws, "
        "eyes, ears, antlers, neck, throat, back, belly, tail, thigh, knee and paw of each "
        "leg); metres, x forward, +Z up, left at +y.",
        expand(rows, _LATERAL),
        unit="m",
        up_axis="z",
        aliases=aliases,
        symmetry=[["front_knee_l", "back_knee_l"], ["front_paw_l", "back_paw_l"]],
        markers=[
            "nose",
            "upper_jaw",
            "lower_jaw",
            "throat_base",
            "throat_end",
            "belly_bottom",
            *(f"{m}_{s}" for m in ("mouth_end", "eye", "earbase", "earend") for s in "lr"),
            *(f"{m}_{s}" for m in ("antler_base", "antler_end", "body_middle") for s in "lr"),
        ],
    )


def macaque() -> dict[str, Any]:
    """A sitting macaque (about 0.5 m crown to rump) for OpenMonkeyStudio's 13 keypoints.

    MacaquePose's COCO-17 names match it too (``left_eye`` ... ``right_ankle``), but COCO
    names pick ``human_pose`` unless the plan is given (``-b macaque``).
    """
    rows = [
        ("hip", None, [0, 0, 0], fixed()),
        ("spine", "hip", [0, 0, 0.1], ball(_Z, [30, 60], 30)),
        ("neck", "spine", [0.02, 0, 0.2], ball(_Z, [40, 60], 70)),
        ("head", "neck", [0.02, 0, 0.06], fixed()),
        ("nose", "neck", [0.07, 0, 0.05], fixed()),
        ("eye_{s}", "neck", [0.06, 0.018, 0.07], fixed()),
        ("ear_{s}", "neck", [0.01, 0.04, 0.07], fixed()),
        ("shoulder_{s}", "spine", [0.0, 0.08, 0.17], ball(_DOWN, 100, 70)),
        ("elbow_{s}", "shoulder_{s}", [0, 0, -0.13], hinge(_Y, -150, 0)),
        ("wrist_{s}", "elbow_{s}", [0, 0, -0.13], universal(_Y, _X, (-70, 70), (-30, 30))),
        ("hand_{s}", "wrist_{s}", [0, 0, -0.06], fixed()),
        ("hip_{s}", "hip", [0.0, 0.05, -0.02], ball(_DOWN, [60, 120], 40)),
        ("knee_{s}", "hip_{s}", [0, 0, -0.15], hinge(_Y, 0, 150)),
        ("ankle_{s}", "knee_{s}", [0, 0, -0.15], universal(_Y, _X, (-50, 50), (-30, 30))),
        ("foot_{s}", "ankle_{s}", [0.08, 0, -0.02], fixed()),
        ("tail_base", "hip", [-0.04, 0, -0.02], _bend(90, 90), _YAW_PITCH),
        ("tail", "tail_base", [-0.3, 0, 0], fixed()),
    ]
    aliases = {"hip": ["pelvis", "hips", "root"], "tail": ["tail_tip", "tail_end"]}
    return plan_dict(
        "macaque",
        "A sitting macaque for OpenMonkeyStudio's keypoints (nose, head, neck, shoulders, "
        "hands, hip, knees, feet, tail) and MacaquePose's COCO names; metres, x forward, "
        "+Z up, left at +y.",
        expand(rows, _LATERAL),
        unit="m",
        up_axis="z",
        aliases=aliases,
        markers=["nose", "head", "eye_l", "eye_r", "ear_l", "ear_r"],
    )


def rodent_side() -> dict[str, Any]:
    """A rat or mouse seen from the side (sagittal keypoints), metres, x forward, +Z up.

    The trunk bends in pitch and yaw at the shoulders and the lumbar spine; the head at
    the neck; the fore and hind limbs have a ball at the shoulder/hip and a hinge at the
    elbow/knee and wrist/ankle. Aliases include LightningPose's mirror-mouse names
    (``paw1LH`` left hind ... ``paw4RH`` right hind, ``tailBase``, ``tailMid``).
    """
    rows = [
        ("back", None, [0, 0, 0], fixed()),
        ("neck", "back", [0.025, 0, 0.005], _bend(60, 60), _YAW_PITCH),
        ("head", "neck", [0.012, 0, 0.004], fixed()),
        ("nose", "neck", [0.03, 0, -0.004], fixed()),
        ("eye_{s}", "neck", [0.018, 0.006, 0.004], fixed()),
        ("ear_{s}", "neck", [0.006, 0.008, 0.008], fixed()),
        ("shoulder_{s}", "back", [0.012, 0.008, -0.008], ball(_DOWN, [40, 80], 30)),
        ("elbow_{s}", "shoulder_{s}", [0, 0, -0.012], hinge(_Y, -10, 140)),
        ("wrist_{s}", "elbow_{s}", [0, 0, -0.01], hinge(_Y, -80, 60)),
        ("forepaw_{s}", "wrist_{s}", [0.005, 0, -0.002], fixed()),
        ("lumbar", "back", [-0.035, 0, 0.004], _bend(40, 40), _YAW_PITCH),
        ("hip_{s}", "lumbar", [-0.01, 0.009, -0.006], ball(_DOWN, [40, 100], 30)),
        ("knee_{s}", "hip_{s}", [0, 0, -0.015], hinge(_Y, -140, 10)),
        ("ankle_{s}", "knee_{s}", [0, 0, -0.016], hinge(_Y, -60, 90)),
        ("hindpaw_{s}", "ankle_{s}", [0.012, 0, -0.002], fixed()),
        ("tail_base", "lumbar", [-0.02, 0, -0.002], _bend(90, 90), _YAW_PITCH),
        ("tail_mid", "tail_base", [-0.04, 0, 0], _bend(60, 60), _YAW_PITCH),
        ("tail_end", "tail_mid", [-0.04, 0, 0], fixed()),
    ]
    aliases = {
        "nose": ["snout"],
        "tail_base": ["tailbase", "TTI", "tail_root"],
        "tail_end": ["tailend", "tail_tip"],
        "tail_mid": ["tailMid", "tail_middle"],
        "back": ["withers", "mid_back"],
        "lumbar": ["lower_back", "rump"],
    }
    mirror_mouse = {"forepaw_l": "paw2LF", "forepaw_r": "paw3RF"}
    mirror_mouse |= {"hindpaw_l": "paw1LH", "hindpaw_r": "paw4RH"}
    for s, word in (("l", "left"), ("r", "right")):
        aliases[f"forepaw_{s}"] = [f"front_{word}_paw", f"{word}_forepaw", f"fore_paw_{s}"]
        aliases[f"hindpaw_{s}"] = [f"back_{word}_paw", f"{word}_hindpaw", f"hind_paw_{s}"]
        for paw in ("forepaw", "hindpaw"):
            aliases[f"{paw}_{s}"].append(mirror_mouse[f"{paw}_{s}"])
    return plan_dict(
        "rodent_side",
        "A rat or mouse for side-view keypoints (nose, eyes, ears, limbs joint by joint, "
        "paws, spine, tail); metres, x forward, +Z up, left at +y.",
        expand(rows, _LATERAL),
        unit="m",
        up_axis="z",
        aliases=aliases,
        markers=["nose", "head", "eye_l", "eye_r", "ear_l", "ear_r"],
    )
