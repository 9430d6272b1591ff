"""Summary rows of a single-view fit: its image scale, where it came from, what one view misses."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["image_scale_row"]


def image_scale_row(observation: dict[str, Any], attrs: dict[str, Any]) -> str:
    """The ``image scale`` row of ``kinefit fit``'s summary.

    Parameters
    ----------
    observation : dict
        The fit store's ``observation`` attr (``kind="image"``).
    attrs : dict
        The fit store's attrs (the body plan's JSON and ``image_scale_estimate``).
    """
    unit = str(json.loads(attrs.get("body_plan") or "{}").get("unit") or "")
    per = f" {unit}/px" if unit and unit != "px" else " per px"
    value = f"{observation.get('image_scale', 1.0):.4g}{per}"
    source = observation.get("image_scale_source", "given")
    estimate = attrs.get("image_scale_estimate") or {}
    if source == "estimated" and estimate:
        return (
            f"{value} (estimated +- {estimate['std']:.2g} from {estimate['frames']} frames, "
            "depth unobservable from one view; --image-scale overrides)"
        )
    if source == "default":
        return f"{value} (nothing measures the body's size; give --image-scale)"
    return f"{value} (given)"
