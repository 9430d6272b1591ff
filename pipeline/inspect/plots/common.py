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


def panel_grid(
    nrows: int,
    ncols: int,
    *,
    panel: tuple[float, float] = (3.4, 1.6),
    top: float = 0.8,
    bottom: float = 0.85,
    left: float = 0.6,
    gap: tuple[float, float] = (0.5, 0.62),
    sharex: bool = False,
) -> tuple[Figure, np.ndarray]:
    """A figure of ``nrows x ncols`` panels laid out in fixed inches (no layout engine).

    Constrained layout costs about a second per dozen panels; a fixed grid costs nothing.

    Parameters
    ----------
    nrows, ncols : int
    panel : (float, float)
        Width and height of a panel with its share of the gaps (inches).
    top, bottom, left : float
        Margins (inches) for the title, the legend and x labels, and the y labels.
    gap : (float, float)
        Horizontal and vertical space between panels (inches).
    sharex : bool

    Returns
    -------
    fig : Figure
    axes : numpy.ndarray of Axes, shape (nrows * ncols,)
    """
    width = max(panel[0] * ncols, 7.0)
    height = panel[1] * nrows + top + bottom
    fig = Figure(figsize=(width, height), dpi=100)
    grid = fig.add_gridspec(
        nrows,
        ncols,
        left=left / width,
        right=1 - 0.15 / width,
        top=1 - top / height,
        bottom=bottom / height,
        hspace=gap[1] / max(panel[1] - gap[1], 0.1),
        wspace=gap[0] / max(panel[0] - gap[0], 0.1),
    )
    axes = np.atleast_1d(grid.subplots(sharex=sharex, squeeze=False)).ravel()
    return fig, axes


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
