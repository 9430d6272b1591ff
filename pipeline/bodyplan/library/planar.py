"""Shipped plans for 2D tracking from above: a top-down mouse and a fly.

Both are in pixels of a typical tracking video and lie in the image plane: x forward
(toward the nose or head), the animal's left at -y (the image's y axis points down), z
out of the image; every DOF is a yaw hinge about z (or a slide in the plane), so each
bend of the body is one named angle. Sizes are medians of published tracking videos
(open-field and elevated-plus-maze mice, about 125 px snout to tail base; SLEAP's fly
example, about 70 px head to abdomen); 2D fits scale the plan to the video.
"""

from __future__ import annotations

from typing import Any

from pipeline.bodyplan.library.build import expand, fixed, hinge, plan_dict, prismatic

__all__ = ["fly_topdown", "mouse_topdown"]

_Z = (0.0, 0.0, 1.0)
_LATERAL = 1  # the y axis: left at -y


def _yaw(lo: float, hi: float) -> dict[str, Any]:
    return hinge(_Z, lo, hi)


def _yaw_angle(name: str) -> dict[str, Any]:
    return {"names": [name]}


def mouse_topdown() -> dict[str, Any]:
    """A mouse seen from above, with the keypoints of the common top-view conventions.

    Joints: the back (root, between the shoulders); the neck yaws the head (nose, eyes,
    ears, ear tips, head centre); four spine hinges bend the body back to the tail base;
    three tail hinges bend the tail to its tip; shoulders, mid sides and hips are
    markers on the trunk. Names follow DeepLabCut's SuperAnimal TopViewMouse keypoints,
    with the names of DLC's open-field and multi-animal mouse projects, SLEAP's mouse
    skeletons and movement's sample data as aliases.
    """
    rows = [
        ("back", None, [0, 0, 0], fixed()),
        ("neck", "back", [15, 0, 0], _yaw(-70, 70), _yaw_angle("head_yaw")),
        ("head", "neck", [12, 0, 0], fixed()),
        ("nose", "neck", [24, 0, 0], fixed()),
        ("eye_{s}", "neck", [12, -7, 0], fixed()),
        ("ear_{s}", "neck", [0, -12, 0], fixed()),
        ("ear_tip_{s}", "neck", [-4, -18, 0], fixed()),
        ("shoulder_{s}", "back", [-2, -13, 0], fixed()),
        ("spine1", "back", [-15, 0, 0], _yaw(-35, 35), _yaw_angle("bend")),
        ("center", "spine1", [-20, 0, 0], _yaw(-35, 35), _yaw_angle("bend")),
        ("lateral_{s}", "center", [0, -15, 0], fixed()),
        ("spine3", "center", [-20, 0, 0], _yaw(-35, 35), _yaw_angle("bend")),
        ("hip_{s}", "spine3", [-5, -14, 0], fixed()),
        ("spine4", "spine3", [-20, 0, 0], _yaw(-35, 35), _yaw_angle("bend")),
        ("tail_base", "spine4", [-20, 0, 0], _yaw(-70, 70), _yaw_angle("tail_yaw")),
        ("tail1", "tail_base", [-30, 0, 0], _yaw(-70, 70), _yaw_angle("bend")),
        ("tail2", "tail1", [-30, 0, 0], _yaw(-70, 70), _yaw_angle("bend")),
        ("tail3", "tail2", [-30, 0, 0], fixed()),
        ("tail_end", "tail3", [-15, 0, 0], fixed()),
    ]
    aliases = {
        "nose": ["snout", "nose_tip", "muzzle"],
        "head": ["head_midpoint", "head_center", "head_centre"],
        "neck": ["neck_base"],
        "back": ["shoulder", "mid_back", "withers"],
        "spine1": ["mid_back1"],
        "center": ["centre", "centroid", "mouse_center", "body_center", "trunk", "spine2"],
        "spine3": ["mid_backend", "mid_backend2"],
        "spine4": ["mid_backend3", "lower_back"],
        "tail_base": ["tailbase", "TTI", "tail_root", "tail_start"],
        "tail2": ["tail_mid", "tail_middle"],
        "tail3": ["tail4"],
        "tail_end": ["tailend", "tail_tip", "tail5"],
    }
    for side, word in (("l", "left"), ("r", "right")):
        aliases[f"lateral_{side}"] = [f"{word}_midside", f"{word}_side", f"{word}_flank"]
        aliases[f"hip_{side}"] = [f"haunch_{word}", f"{word}_haunch"]
        aliases[f"ear_tip_{side}"] = [f"{word}_ear_tip", f"ear_end_{side}"]
    joints = expand(rows, _LATERAL)
    return plan_dict(
        "mouse_topdown",
        "A mouse seen from above (top-view keypoints: nose, ears, spine, tail), pixels of "
        "a typical open-field video; x forward, left at -y, z out of the image.",
        joints,
        unit="px",
        up_axis="z",
        aliases=aliases,
        markers=[
            *(
                f"{m}_{s}"
                for m in ("eye", "ear", "ear_tip", "shoulder", "lateral", "hip")
                for s in "lr"
            ),
            "nose",
            "head",
            "tail_end",
        ],
    )


def fly_topdown() -> dict[str, Any]:
    """A fruit fly seen from above, for SLEAP's fly skeleton (13 nodes).

    Joints: the thorax (root); the neck yaws the head (eyes); the petiole yaws the
    abdomen; each wing turns about its hinge; each leg turns at its coxa and extends
    (a slide) to its tip (SLEAP's ``forelegL4`` is the tarsus tip). Names follow SLEAP's
    fly skeleton (``head``, ``thorax``, ``abdomen``, ``wingL``, ``forelegL4``, ``eyeL``);
    the joints are named ``wing_l``, ``foreleg_tip_l``... with those as aliases.
    """
    legs = (("foreleg", 6, 36, 40), ("midleg", 0, 36, 90), ("hindleg", -6, 36, 140))
    rows: list[tuple[Any, ...]] = [
        ("thorax", None, [0, 0, 0], fixed()),
        ("neck", "thorax", [22, 0, 0], _yaw(-30, 30), _yaw_angle("head_yaw")),
        ("head", "neck", [16, 0, 0], fixed()),
        ("eye_{s}", "neck", [14, -11, 0], fixed()),
        ("petiole", "thorax", [-12, 0, 0], _yaw(-30, 30), _yaw_angle("abdomen_yaw")),
        ("abdomen", "petiole", [-20, 0, 0], fixed()),
        ("wing_hinge_{s}", "thorax", [0, -6, 0], _yaw(-30, 120), _yaw_angle("angle")),
        ("wing_{s}", "wing_hinge_{s}", [-50, 0, 0], fixed()),
    ]
    import math

    for leg, x, length, angle_deg in legs:
        a = math.radians(angle_deg)
        direction = [math.cos(a), -math.sin(a), 0.0]  # from forward toward the left
        rows += [
            (f"{leg}_coxa_{{s}}", "thorax", [x, -4, 0], _yaw(-60, 60), _yaw_angle("swing")),
            (
                f"{leg}_extension_{{s}}",
                f"{leg}_coxa_{{s}}",
                [0, 0, 0],
                prismatic(direction, -0.5 * length, 0.5 * length),
            ),
            (
                f"{leg}_tip_{{s}}",
                f"{leg}_extension_{{s}}",
                [length * c for c in direction],
                fixed(),
            ),
        ]
    aliases: dict[str, list[str]] = {"abdomen": ["abdomen_tip"]}
    for side, letter in (("l", "L"), ("r", "R")):
        aliases[f"wing_{side}"] = [f"wing{letter}"]
        aliases[f"eye_{side}"] = [f"eye{letter}"]
        for leg, *_ in legs:
            aliases[f"{leg}_tip_{side}"] = [f"{leg}{letter}4", f"{leg}{letter}"]
    return plan_dict(
        "fly_topdown",
        "A fruit fly seen from above (SLEAP's fly skeleton: head, thorax, abdomen, wings, "
        "leg tips, eyes), pixels; x forward, left at -y, z out of the image.",
        expand(rows, _LATERAL),
        unit="px",
        up_axis="z",
        aliases=aliases,
        markers=["head", "abdomen", "eye_l", "eye_r"],
    )
