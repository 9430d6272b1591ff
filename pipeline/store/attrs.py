"""The root attributes of a zarr store, read without opening it as a dataset.

Both stores (tracks and fit) keep what kinefit decides by in their root attributes
(``ds_type``, fingerprints, the raw file's signature and digest); reading them here is
cheap and never fails: a store that cannot be read has none.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import zarr

__all__ = ["residual_unit", "store_attrs"]


def store_attrs(path: str | Path) -> dict[str, Any]:
    """Return the root attrs of a zarr (format 3) store; empty if missing or unreadable.

    Parameters
    ----------
    path : str or Path
        The store's folder.

    Returns
    -------
    dict
        A copy of the root group's attributes.
    """
    try:
        return dict(zarr.open_group(path, mode="r", zarr_format=3).attrs)
    except Exception:  # noqa: BLE001 - any unreadable store has no attrs
        return {}


def residual_unit(attrs: Mapping[str, Any]) -> str:
    """The unit of a fit's ``residual``, ``rms_error`` and ``max_error`` (from its attrs).

    Pixels where the fit compares pixels (a single image, or several cameras fitted
    directly); otherwise the fit's length unit (attrs ``unit``; a triangulated multi-view
    fit compares 3-D points). Stores written before the attr ``residual_unit`` existed
    are read by their ``observation`` record.
    """
    if attrs.get("residual_unit"):
        return str(attrs["residual_unit"])
    observation = attrs.get("observation") or {}
    kind, mode = observation.get("kind"), observation.get("multiview")
    if kind == "image" or (kind == "cameras" and mode != "triangulate"):
        return "px"
    return str(attrs.get("unit") or "length units")
