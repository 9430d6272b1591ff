"""What a 2-D fit measured and what it did not, for the exporters.

A fit of 2-D tracks writes 3-D poses like any other, but one image cannot give depth (nor
the tilts out of the image), and some coordinates no view constrains: the fit store names
them in its ``unobservable`` attr and the prior holds them. Every export of such a fit
says so (:func:`warn_unobserved`, an :class:`ExportWarning` naming the coordinates), and
the exporters that write the observed keypoints beside the fitted ones place them in the
fit's 3-D frame (:func:`observed_points`): a single view's pixels on its image plane
(``z = 0``, pixels times the fit's ``image_scale``, as the report draws them), several
calibrated views' pixels triangulated through the fit's cameras (which are already in
the body plan's frame).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr

from pipeline.cameras.camera import Camera
from pipeline.cameras.triangulate import triangulate

__all__ = ["ExportWarning", "observation", "observed_points", "unobserved_note", "warn_unobserved"]


class ExportWarning(UserWarning):
    """An export writes values the fit did not measure (they are the prior's)."""


def observation(fit: xr.Dataset) -> dict[str, Any]:
    """The fit's ``observation`` attr (kind ``image`` or ``cameras``); empty for 3-D fits."""
    value = fit.attrs.get("observation")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return {}
    return dict(value) if isinstance(value, Mapping) else {}


def _unobservable(fit: xr.Dataset) -> list[str]:
    names = fit.attrs.get("unobservable") or []
    return [names] if isinstance(names, str) else [str(n) for n in names]


def unobserved_note(fit: xr.Dataset) -> str:
    """One sentence on what the fit's views could not measure; ``""`` for none (or 3-D)."""
    kind = observation(fit).get("kind")
    names = _unobservable(fit)
    if kind == "image":
        listed = f" ({', '.join(names)})" if names else ""
        return (
            "a single-view 2-D fit: depth (z, the image plane's normal) and the rotations "
            f"out of the image are not observable from one view{listed}; their values are "
            "the prior's, not measured"
        )
    if kind == "cameras" and names:
        return (
            f"not observable from these views: {', '.join(names)}; their values are the "
            "prior's, not measured"
        )
    return ""


def warn_unobserved(fit: xr.Dataset, where: str) -> None:
    """Warn (:class:`ExportWarning`) that an export holds values the fit did not measure."""
    note = unobserved_note(fit)
    if note:
        warnings.warn(f"{where}: {note}", ExportWarning, stacklevel=2)


def observed_points(fit: xr.Dataset, pixels: np.ndarray) -> np.ndarray:
    """A 2-D fit's observed keypoints as points of the fit's 3-D frame.

    Parameters
    ----------
    fit : xarray.Dataset
        A fit with an ``observation`` attr of kind ``image`` or ``cameras``.
    pixels : ndarray
        ``(time, keypoint, 2)`` for one image, ``(time, view, keypoint, 2)`` for cameras
        (views in the order of the fit's cameras); pixels, NaN where missing.

    Returns
    -------
    ndarray, shape (time, keypoint, 3)
        Image plane: ``(x, y) * image_scale`` and ``z = 0``. Cameras: the DLT
        triangulation of the views that see the keypoint (NaN where fewer than two do,
        and for every keypoint of a single-camera fit: one view gives no depth).
    """
    seen = observation(fit)
    if seen.get("kind") == "image":
        scale = float(seen.get("image_scale") or 1.0)
        xy = np.asarray(pixels, dtype=np.float64) * scale
        return np.concatenate([xy, np.where(np.isfinite(xy[..., :1]), 0.0, np.nan)], axis=-1)
    cameras = [Camera.from_dict(dict(c), "the fit's cameras") for c in seen.get("cameras") or []]
    pix = np.asarray(pixels, dtype=np.float64)
    if len(cameras) < 2:
        return np.full((pix.shape[0], pix.shape[2], 3), np.nan)
    return triangulate(cameras, np.moveaxis(pix, 1, 2))  # (time, keypoint, view, 2) in
