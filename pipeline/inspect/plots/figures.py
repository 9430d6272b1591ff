"""Figure plumbing of the matplotlib plots: figures without pyplot, panel grids, PNG."""

from __future__ import annotations

import io

import numpy as np
from matplotlib.figure import Figure


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
