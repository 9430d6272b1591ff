"""The shipped body plans: one per common keypoint convention, chosen by name or by match.

========================= ====== ==== ==================================================
plan                      unit   up   for
========================= ====== ==== ==================================================
``mouse_topdown``         px     z    top-view mouse (SuperAnimal TopViewMouse, DLC
                                      open-field and multi-animal, SLEAP mice)
``fly_topdown``           px     z    SLEAP's fly skeleton (13 nodes)
``rodent_side``           m      z    side-view rat or mouse, limbs joint by joint
``quadruped``             m      z    SuperAnimal-Quadruped (39 keypoints)
``macaque``               m      z    OpenMonkeyStudio (13), MacaquePose
``human_pose``            m      y    COCO-17, HALPE-26, OpenPose BODY_25 / BODY_25B
``plugin_gait``           mm     y    Vicon Plug-in Gait full-body markers
``mannequin``             m      y    kinefit's humanoid (Kimodo's conventions)
========================= ====== ==== ==================================================

Every plan is a real kinematic tree in the version-2 format, validated by the loader,
with named angles, a ``calibration`` field (markers as offsets, symmetry groups) and its
keypoints' other names as ``x-keypoint-aliases``. :func:`shipped_plan` builds one;
:func:`pipeline.bodyplan.library.choice.rank_plans` ranks them for a track's keypoint
names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pipeline.bodyplan.io import load_body_plan
from pipeline.bodyplan.library.humans import human_pose, plugin_gait
from pipeline.bodyplan.library.mammals import macaque, quadruped, rodent_side
from pipeline.bodyplan.library.planar import fly_topdown, mouse_topdown
from pipeline.bodyplan.load_errors import BodyPlanError
from pipeline.bodyplan.mannequin import mannequin, mannequin_dict
from pipeline.bodyplan.model import BodyPlan

__all__ = ["SHIPPED", "shipped_plan", "shipped_plan_dict"]

#: Plan name -> builder of its JSON object, in the order ties are broken (first wins).
SHIPPED: dict[str, Callable[[], dict[str, Any]]] = {
    "mouse_topdown": mouse_topdown,
    "fly_topdown": fly_topdown,
    "human_pose": human_pose,
    "mannequin": mannequin_dict,
    "plugin_gait": plugin_gait,
    "quadruped": quadruped,
    "rodent_side": rodent_side,
    "macaque": macaque,
}
_CACHE: dict[str, BodyPlan] = {}


def shipped_plan_dict(name: str) -> dict[str, Any]:
    """The JSON object of the shipped plan ``name``.

    Raises
    ------
    BodyPlanError
        Unknown name; the message lists the shipped plans.
    """
    if name not in SHIPPED:
        raise BodyPlanError(
            name, f"no shipped body plan of that name; shipped: {', '.join(SHIPPED)}"
        )
    return SHIPPED[name]()


def shipped_plan(name: str) -> BodyPlan:
    """The shipped plan ``name``, loaded and validated (built once per process).

    Raises
    ------
    BodyPlanError
        Unknown name; the message lists the shipped plans.
    """
    if name == "mannequin":  # the prefab as it always was (its own source name)
        return mannequin()
    if name not in _CACHE:
        _CACHE[name] = load_body_plan(
            shipped_plan_dict(name), source=f"pipeline.bodyplan.library:{name}"
        )
    return _CACHE[name]
