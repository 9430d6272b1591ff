"""Figure plumbing shared by the plot helpers: figures without pyplot, time binning, PNG."""

from __future__ import annotations

import io
import math

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from pipeline.inspect.validate import length_unit, time_unit

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


def new_figure(width: float, height: float) -> Figure:
    """A figure (inches) with constrained layout, not registered with pyplot."""
    return Figure(figsize=(width, height), layout="constrained", dpi=100)


def figure_png(fig: Figure, dpi: int = 100) -> bytes:
    """Render a figure to PNG bytes (Agg), whatever the matplotlib backend."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def color(index: int) -> str:
    """Colour of the ``index``-th individual."""
    return COLORS[index % len(COLORS)]


def time_label(ds: xr.Dataset) -> str:
    """Axis label of the time coordinate, with its unit."""
    return f"time ({time_unit(ds)})"


def error_label(ds: xr.Dataset, what: str = "error") -> str:
    """Axis label of a distance, with the fit's length unit."""
    return f"{what} ({length_unit(ds)})"


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
