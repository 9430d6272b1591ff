"""Small valid body plans (as decoded JSON) that the body-plan tests mutate.

``small_v1`` (QuickIK format)::

    root ── upper (hinge z, hinge y) ── lower (slide x) ── tip

``small_v2`` (one joint of each kind, plus a plain ``dofs`` joint)::

    base(fixed) ── slider(prismatic) ── shoulder(ball) ── elbow(hinge)
        ── wrist(universal) ── knuckle(dofs: hinge) ── finger(fixed)
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

#: The mannequin's saved form in the repository.
MANNEQUIN_JSON = Path(__file__).resolve().parents[2] / "configs" / "bodyplans" / "mannequin.json"

_ID = [1.0, 0.0, 0.0, 0.0]

SMALL_V1: dict[str, Any] = {
    "fixed_base": False,
    "x-name": "small",
    "joints": [
        {"name": "root", "parent": None, "offset_pos": [0, 0, 0], "offset_quat": _ID, "dofs": []},
        {
            "name": "upper",
            "parent": "root",
            "offset_pos": [0.0, 0.0, 0.0],
            "offset_quat": _ID,
            "dofs": [
                {
                    "name": "upper_yaw",
                    "type": "hinge",
                    "axis": [0, 0, 1],
                    "neutral": 0.0,
                    "limits": [-1.0, 1.0],
                },
                {
                    "name": "upper_pitch",
                    "type": "hinge",
                    "axis": [0, 1, 0],
                    "neutral": 0.1,
                    "limits": None,
                },
            ],
        },
        {
            "name": "lower",
            "parent": "upper",
            "offset_pos": [1.0, 0.0, 0.0],
            "offset_quat": _ID,
            "dofs": [{"type": "slide", "axis": [1, 0, 0], "neutral": 0.0, "limits": [0.0, 0.5]}],
        },
        {"name": "tip", "parent": "lower", "offset_pos": [1, 0, 0], "offset_quat": _ID, "dofs": []},
    ],
}

SMALL_V2: dict[str, Any] = {
    "version": 2,
    "fixed_base": True,
    "joints": [
        {
            "name": "base",
            "parent": None,
            "offset_pos": [0, 0, 0],
            "offset_quat": _ID,
            "kind": "fixed",
        },
        {
            "name": "slider",
            "parent": "base",
            "offset_pos": [0, 0, 0],
            "offset_quat": _ID,
            "kind": "prismatic",
            "axis": [0, 0, 2],
            "limits": [-0.1, 0.2],
            "neutral": 0.05,
        },
        {
            "name": "shoulder",
            "parent": "slider",
            "offset_pos": [0, 0.1, 0],
            "offset_quat": _ID,
            "kind": "ball",
            "axis": [1, 0, 0],
            "swing_limit": [1.0, 0.5],
            "twist_limit": [-1, 1],
            "neutral": [0.1, 0.2, 0.3],
        },
        {
            "name": "elbow",
            "parent": "shoulder",
            "offset_pos": [0.3, 0, 0],
            "offset_quat": _ID,
            "weight_scaler": 0.5,
            "kind": "hinge",
            "axis": [0, 0, 1],
            "limits": [0, 2.5],
            "neutral": 0.5,
            "dof_weight_scaler": 2.0,
        },
        {
            "name": "wrist",
            "parent": "elbow",
            "offset_pos": [0.25, 0, 0],
            "offset_quat": _ID,
            "kind": "universal",
            "axes": [[0, 0, 1], [1, 0, 1]],
            "limits": [[-1, 1], None],
            "neutral": [0.2, 0.0],
        },
        {
            "name": "knuckle",
            "parent": "wrist",
            "offset_pos": [0.08, 0, 0],
            "offset_quat": _ID,
            "dofs": [{"type": "hinge", "axis": [0, 0, 1], "neutral": 0.0, "limits": [-0.5, 1.5]}],
        },
        {
            "name": "finger",
            "parent": "knuckle",
            "offset_pos": [0.04, 0, 0],
            "offset_quat": _ID,
            "kind": "fixed",
        },
    ],
}


def small_v1() -> dict[str, Any]:
    """A fresh copy of :data:`SMALL_V1`."""
    return copy.deepcopy(SMALL_V1)


def small_v2() -> dict[str, Any]:
    """A fresh copy of :data:`SMALL_V2`."""
    return copy.deepcopy(SMALL_V2)
