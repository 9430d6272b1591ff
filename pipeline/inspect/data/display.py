"""What every view shares on screen: individual colours, time binning, axis labels, up axis."""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from pipeline.inspect.data.checks import time_unit
from pipeline.store.attrs import residual_unit

#: Colours of individuals (matplotlib's tab10 cycle).
COLORS: tuple[str, ...] = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
#: Most time bins drawn along a time axis; longer sessions are binned.
MAX_TIME_POINTS = 2000


def color(index: int) -> str:
    """Colour of the ``index``-th individual."""
    return COLORS[index % len(COLORS)]


def time_label(ds: xr.Dataset) -> str:
    """Axis label of the time coordinate, with its unit."""
    return f"time ({time_unit(ds)})"


def error_label(ds: xr.Dataset, what: str = "error") -> str:
    """Axis label of a residual distance, in the fit's ``residual_unit`` (px for 2D fits)."""
    return f"{what} ({residual_unit(ds.attrs)})"


def bin_time(da: xr.DataArray, how: str = "max", max_points: int = MAX_TIME_POINTS):
    """Bin ``da`` along ``time`` to at most ``max_points`` bins (max, mean or min per bin).

    Returns
    -------
    binned : xarray.DataArray
        ``da`` itself when it is short enough; NaN-skipping reductions otherwise, with
        each bin's first time as its coordinate.
    factor : int
        Frames per bin (1: not binned).
    """
    n = da.sizes["time"]
    if n <= max_points:
        return da, 1
    factor = math.ceil(n / max_points)
    coarse = da.coarsen(time=factor, boundary="pad", coord_func="min")
    return getattr(coarse, how)(), factor


def binned_note(factor: int) -> str:
    """Caption fragment saying how time was binned ("" when it was not)."""
    return "" if factor == 1 else f" (bins of {factor} frames)"


def nan_array(da: xr.DataArray) -> np.ndarray:
    """Load ``da`` as float64 numpy."""
    return np.asarray(da.values, dtype=float)


def view_axes(up_axis: str | None) -> tuple[int, int, int, float]:
    """Indices of the two horizontal axes and the up axis (x=0, y=1, z=2), and its sign."""
    up = str(up_axis or "z").strip().lower()
    sign = -1.0 if up.startswith("-") else 1.0
    u = "xyz".index(up.lstrip("+-")) if up.lstrip("+-") in ("x", "y", "z") else 2
    a, b = (i for i in range(3) if i != u)
    return a, b, u, sign
