"""A small version-3 plan with driven axes and a coupling (decoded JSON)::

    root ── hip (hinge z) ── knee (slides x, y = splines of knee; hinge z "knee";
        │                         hinge x = polynomial of beta) ── ankle ── toe
        └── patella (hinge z = piecewise-linear of beta, slide y = 1.5 * linear of beta)
                ── patella_tip

``beta = 0.1 - 0.5 * knee`` (a coupling), so the patella follows the knee angle.
"""

from __future__ import annotations

import copy
from typing import Any

_ID = [1.0, 0.0, 0.0, 0.0]
_KNOTS = [-2.0, -1.5, -1.0, -0.5, 0.0, 0.2]

COUPLED: dict[str, Any] = {
    "version": 3,
    "fixed_base": False,
    "x-name": "coupled",
    "couplings": [
        {
            "name": "beta",
            "coordinate": "knee",
            "function": {"type": "LinearFunction", "coefficients": [-0.5, 0.1]},
        }
    ],
    "joints": [
        {"name": "root", "parent": None, "offset_pos": [0, 0, 0], "offset_quat": _ID, "dofs": []},
        {
            "name": "hip",
            "parent": "root",
            "offset_pos": [0.0, 0.0, 0.1],
            "offset_quat": _ID,
            "dofs": [
                {"name": "hip", "type": "hinge", "axis": [0, 0, 1], "neutral": 0.0, "limits": None}
            ],
        },
        {
            "name": "knee",
            "parent": "hip",
            "offset_pos": [0.0, -0.4, 0.0],
            "offset_quat": [0.9, 0.1, 0.2, 0.3],
            "dofs": [
                {
                    "type": "slide",
                    "axis": [1, 0, 0],
                    "coordinate": "knee",
                    "function": {
                        "type": "SimmSpline",
                        "x": _KNOTS,
                        "y": [-0.003, 0.0018, 0.0041, 0.0041, 0.0, -0.001],
                    },
                },
                {
                    "type": "slide",
                    "axis": [0, 1, 0],
                    "coordinate": "knee",
                    "function": {
                        "type": "NaturalCubicSpline",
                        "x": _KNOTS,
                        "y": [-0.42, -0.41, -0.405, -0.4, -0.396, -0.395],
                    },
                },
                {
                    "name": "knee",
                    "type": "hinge",
                    "axis": [0, 0, 1],
                    "neutral": -0.3,
                    "limits": [-2.0, 0.2],
                },
                {
                    "type": "hinge",
                    "axis": [1, 0, 0],
                    "coordinate": "beta",
                    "function": {"type": "PolynomialFunction", "coefficients": [0.3, -0.2, 0.05]},
                },
            ],
        },
        {
            "name": "ankle",
            "parent": "knee",
            "offset_pos": [0, -0.4, 0],
            "offset_quat": _ID,
            "dofs": [],
        },
        {
            "name": "toe",
            "parent": "ankle",
            "offset_pos": [0.1, -0.05, 0],
            "offset_quat": _ID,
            "dofs": [],
        },
        {
            "name": "patella",
            "parent": "hip",
            "offset_pos": [0.05, -0.38, 0.0],
            "offset_quat": _ID,
            "dofs": [
                {
                    "type": "hinge",
                    "axis": [0, 0, 1],
                    "coordinate": "beta",
                    "function": {
                        "type": "PiecewiseLinearFunction",
                        "x": [-0.5, 0.1, 0.6, 1.2],
                        "y": [0.2, 0.0, -0.4, -0.5],
                    },
                },
                {
                    "type": "slide",
                    "axis": [0, 1, 0],
                    "coordinate": "beta",
                    "function": {
                        "type": "MultiplierFunction",
                        "scale": 1.5,
                        "function": {"type": "LinearFunction", "coefficients": [0.02, -0.01]},
                    },
                },
            ],
        },
        {
            "name": "patella_tip",
            "parent": "patella",
            "offset_pos": [0.02, 0, 0],
            "offset_quat": _ID,
            "dofs": [],
        },
    ],
}


def coupled() -> dict[str, Any]:
    """A fresh copy of :data:`COUPLED`."""
    return copy.deepcopy(COUPLED)
