"""Where the fit misses: residual heatmap (time x keypoint), per-keypoint error distributions."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import matplotlib as mpl
import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from pipeline.inspect.data.checks import as_dataset, pick_individuals, pick_time
from pipeline.inspect.data.display import bin_time, binned_note, error_label, nan_array, time_label
from pipeline.inspect.plots.figures import new_figure

__all__ = ["plot_error_distributions", "plot_residual_heatmap"]

_RESIDUAL = {"residual": ("time", "individual", "keypoint")}
#: Most frames read for the distributions; longer sessions are subsampled evenly.
MAX_DISTRIBUTION_FRAMES = 200_000
_UNOBSERVED = "#d9d9d9"


def _keypoint_ticks(ax, names: list[str], axis: str = "y") -> None:
    n = len(names)
    step = max(1, math.ceil(n / 60))
    ticks = np.arange(0, n, step)
    size = min(8.0, max(5.0, 500.0 / n))
    if axis == "y":
        ax.set_yticks(ticks, [names[i] for i in ticks], fontsize=size)
    else:
        ax.set_xticks(ticks, [names[i] for i in ticks], fontsize=size, rotation=90)


def plot_residual_heatmap(
    fit: xr.Dataset | xr.DataArray,
    *,
    individual: str | Sequence[str] | None = None,
    time: slice | tuple[float, float] | None = None,
    vmax: float | None = None,
) -> Figure:
    """Plot residual distance per keypoint over time, one panel per individual.

    Parameters
    ----------
    fit : xarray.Dataset or xarray.DataArray
        Needs ``residual (time, individual, keypoint)`` (length units, NaN where the
        keypoint was not observed).
    individual : str or sequence of str, optional
        Default all individuals.
    time : slice or (start, stop), optional
        Time range (time-coordinate units, inclusive).
    vmax : float, optional
        Top of the colour scale; default the 99.5th percentile of the residuals shown.

    Returns
    -------
    matplotlib.figure.Figure
        Keypoints in tree order top to bottom; unobserved entries grey; long sessions
        binned along time by the maximum in each bin.
    """
    ds = pick_time(as_dataset(fit, _RESIDUAL, "plot_residual_heatmap"), time)
    individuals = pick_individuals(ds, individual)
    residual, factor = bin_time(ds["residual"].sel(individual=individuals), "max")
    data = nan_array(residual.transpose("individual", "keypoint", "time"))
    t = nan_array(ds["time"])
    names = [str(k) for k in ds["keypoint"].values]
    finite = data[np.isfinite(data)]
    top = vmax if vmax is not None else (np.percentile(finite, 99.5) if finite.size else 1.0)
    top = float(top) if top > 0 else 1.0
    cmap = mpl.colormaps["magma_r"].with_extremes(bad=_UNOBSERVED)
    height = max(2.2, 0.13 * len(names) + 0.9)
    fig = new_figure(11, height * len(individuals) + 0.8)
    axes = np.atleast_1d(fig.subplots(len(individuals), 1, sharex=True, squeeze=False)).ravel()
    half = 0.5 * (t[1] - t[0]) if t.size > 1 else 0.5
    image = None
    for ax, name, block in zip(axes, individuals, data, strict=True):
        image = ax.imshow(
            np.ma.masked_invalid(block),
            aspect="auto",
            interpolation="nearest",
            cmap=cmap,
            vmin=0.0,
            vmax=top,
            extent=(t[0] - half, t[-1] + half, len(names) - 0.5, -0.5),
        )
        _keypoint_ticks(ax, names)
        ax.set_ylabel(f"keypoint — {name}", fontsize=9)
    axes[-1].set_xlabel(time_label(ds))
    bar = fig.colorbar(image, ax=list(axes), extend="max", shrink=0.9, pad=0.01)
    bar.set_label(error_label(ds, "residual distance") + "; grey: unobserved")
    session = ds.attrs.get("session")
    fig.suptitle(
        f"Residual per keypoint{f' — {session}' if session else ''}{binned_note(factor)}",
        fontsize=12,
    )
    return fig


def _box_stats(values: np.ndarray) -> dict:
    q = np.percentile(values, [5, 25, 50, 75, 95])
    return {
        "whislo": q[0],
        "q1": q[1],
        "med": q[2],
        "q3": q[3],
        "whishi": q[4],
        "fliers": [],
    }


def plot_error_distributions(
    fit: xr.Dataset | xr.DataArray,
    *,
    individual: str | Sequence[str] | None = None,
    time: slice | tuple[float, float] | None = None,
    log: bool | None = None,
) -> Figure:
    """Plot each keypoint's residual distribution (box plots) and how often it was seen.

    Parameters
    ----------
    fit : xarray.Dataset or xarray.DataArray
        Needs ``residual (time, individual, keypoint)``.
    individual : str or sequence of str, optional
        Individuals pooled into the distributions (default all).
    time : slice or (start, stop), optional
        Time range (time-coordinate units, inclusive).
    log : bool, optional
        Logarithmic error axis; default when the largest error exceeds 30x the median.

    Returns
    -------
    matplotlib.figure.Figure
        Left: boxes from the 25th to 75th percentile, median line, whiskers at the 5th and
        95th, a cross at the maximum. Right: observed fraction per keypoint.
    """
    ds = pick_time(as_dataset(fit, _RESIDUAL, "plot_error_distributions"), time)
    individuals = pick_individuals(ds, individual)
    step = max(1, math.ceil(ds.sizes["time"] / MAX_DISTRIBUTION_FRAMES))
    residual = ds["residual"].sel(individual=individuals).isel(time=slice(None, None, step))
    data = nan_array(residual.transpose("keypoint", "time", "individual"))
    data = data.reshape(data.shape[0], -1)
    names = [str(k) for k in ds["keypoint"].values]
    observed = np.isfinite(data).mean(axis=1) if data.shape[1] else np.zeros(len(names))
    stats, positions, peaks = [], [], []
    for k in range(len(names)):
        row = data[k][np.isfinite(data[k])]
        if row.size:
            stats.append(_box_stats(row))
            positions.append(k)
            peaks.append(row.max())
    finite = data[np.isfinite(data)]
    if log is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            med = np.median(finite) if finite.size else 0.0
        log = bool(finite.size and med > 0 and finite.max() > 30 * med)
    fig = new_figure(11, max(3.0, 0.24 * len(names) + 1.4))
    ax, side = fig.subplots(1, 2, sharey=True, width_ratios=[5, 1])
    if stats:
        ax.bxp(
            stats,
            positions=positions,
            orientation="horizontal",
            widths=0.6,
            showfliers=False,
            patch_artist=True,
            boxprops={"facecolor": "#9ecae1", "edgecolor": "#3182bd"},
            medianprops={"color": "#08306b", "lw": 1.5},
        )
        ax.plot(peaks, positions, "x", color="#d62728", ms=4, label="maximum")
        ax.legend(loc="lower right", fontsize=8)
    for k in set(range(len(names))) - set(positions):
        ax.text(0.01, k, "never observed", transform=ax.get_yaxis_transform(), va="center")
    if log and stats:
        ax.set_xscale("log")
    ax.set_ylim(len(names) - 0.5, -0.5)
    _keypoint_ticks(ax, names)
    ax.set_xlabel(error_label(ds, "residual distance"))
    ax.grid(axis="x", alpha=0.3)
    side.barh(np.arange(len(names)), observed * 100, color="#74c476")
    side.set_xlim(0, 100)
    side.set_xlabel("observed (%)")
    side.grid(axis="x", alpha=0.3)
    session = ds.attrs.get("session")
    who = ", ".join(individuals)
    every = f", every {step}th frame" if step > 1 else ""
    fig.suptitle(
        f"Residual distribution per keypoint{f' — {session}' if session else ''} ({who}{every})",
        fontsize=12,
    )
    return fig
