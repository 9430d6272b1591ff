"""How a fit saw its subject (3D, calibrated cameras, one image plane), and what it could not.

A fit of 3D tracks and a multi-view fit (through calibrated cameras) hold 3D positions. A
single-view 2D fit lives on the image plane: the world's XY plane is the image (x right,
y down, pixels times the ``image_scale`` of the fit's ``observation`` attr) and z is 0, so
its views draw that plane. One view cannot determine every coordinate (depth, the tilts out
of the image); the fit store names them in its ``unobservable`` attr, and the prior holds
them: :func:`unobservable_note` says so on every view.
"""

from __future__ import annotations

import json

import numpy as np
import xarray as xr

from pipeline.inspect.data.checks import attr_dict

__all__ = [
    "image_scale",
    "observation_kind",
    "on_image_plane",
    "to_fit_space",
    "unobservable",
    "unobservable_note",
]


def observation_kind(ds: xr.Dataset) -> str:
    """``"image"`` (one view, no calibration), ``"cameras"`` (calibrated views) or ``"3d"``."""
    kind = attr_dict(ds.attrs.get("observation")).get("kind")
    return kind if kind in ("image", "cameras") else "3d"


def on_image_plane(ds: xr.Dataset) -> bool:
    """Whether the fit is a single-view 2D fit, drawn on its image plane."""
    return observation_kind(ds) == "image"


def image_scale(ds: xr.Dataset) -> float:
    """Body-plan length per image pixel of a single-view 2D fit (1 when not recorded)."""
    scale = attr_dict(ds.attrs.get("observation")).get("image_scale")
    return 1.0 if scale is None else float(scale)


def unobservable(ds: xr.Dataset) -> list[str]:
    """Coordinates the fit's views cannot determine (``unobservable`` attr; root ones too)."""
    names = ds.attrs.get("unobservable") or []
    if isinstance(names, str):
        names = json.loads(names) if names.strip().startswith("[") else [names]
    return [str(n) for n in names]


def unobservable_note(ds: xr.Dataset) -> str:
    """A sentence naming the unobservable coordinates, or ``""`` when there are none.

    Returns
    -------
    str
        E.g. ``"Not observable from one view: root_position/z, root_rotation/x (held by
        the prior, not measured)."``
    """
    names = unobservable(ds)
    if not names:
        return ""
    where = "from one view" if on_image_plane(ds) else "from these views"
    return f"Not observable {where}: {', '.join(names)} (held by the prior, not measured)."


def to_fit_space(ds: xr.Dataset, position: xr.DataArray) -> xr.DataArray:
    """Image-plane keypoints ``(..., space=[x, y], ...)`` in pixels as points of the fit.

    Parameters
    ----------
    ds : xarray.Dataset
        A single-view 2D fit (its ``space`` coordinate is x, y, z).
    position : xarray.DataArray
        Tracked keypoints with ``space`` ``x, y`` (pixels).

    Returns
    -------
    xarray.DataArray
        The same keypoints times :func:`image_scale`, with the fit's ``space`` coordinate
        and z = 0 (the image plane); lazy when ``position`` is.
    """
    scaled = position * image_scale(ds)
    plane = scaled.isel(space=0, drop=True) * 0.0
    parts = [
        scaled.sel(space=[str(s)]) if str(s) in scaled["space"].values else None
        for s in ds["space"].values
    ]
    filled = [
        part if part is not None else plane.expand_dims(space=[str(s)]).astype(scaled.dtype)
        for part, s in zip(parts, ds["space"].values, strict=True)
    ]
    out = xr.concat(filled, dim="space")
    return out.assign_coords(space=np.asarray(ds["space"].values, dtype=object))
