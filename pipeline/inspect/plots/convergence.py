"""How the solver did over time: iterations, convergence, errors and chunk seams."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from pipeline.inspect.data.checks import as_dataset, attr_dict, pick_individuals, pick_time
from pipeline.inspect.data.display import (
    bin_time,
    binned_note,
    color,
    error_label,
    nan_array,
    time_label,
)
from pipeline.inspect.plots.figures import new_figure

__all__ = ["plot_solver_convergence"]

_NEEDS = {"iterations": ("time", "individual"), "converged": ("time", "individual")}
#: At most this many bins for the non-converged rate ...
RATE_BINS = 150
#: ... of at least this many frames each.
RATE_MIN_FRAMES = 10


def plot_solver_convergence(
    fit: xr.Dataset | xr.DataArray,
    *,
    individual: str | Sequence[str] | None = None,
    time: slice | tuple[float, float] | None = None,
) -> Figure:
    """Plot solver iterations and convergence over time (plus errors and seams if present).

    Parameters
    ----------
    fit : xarray.Dataset
        Needs ``iterations`` and ``converged`` (time, individual). ``rms_error`` and
        ``max_error`` add an error panel, ``seam_disagreement`` a seam panel, and the
        ``solver_config`` attr the iteration cap.
    individual : str or sequence of str, optional
        Default all individuals.
    time : slice or (start, stop), optional
        Time range (time-coordinate units, inclusive).

    Returns
    -------
    matplotlib.figure.Figure
        Panels sharing the time axis: iterations per frame (non-converged frames marked),
        the non-converged rate (% of frames per bin), RMS and max error (log scale), and
        the DOF disagreement at each chunk seam.
    """
    full = as_dataset(fit, _NEEDS, "plot_solver_convergence")
    ds = pick_time(full, time)
    individuals = pick_individuals(ds, individual)
    has_err = "rms_error" in ds and "max_error" in ds
    has_seam = "seam_disagreement" in ds and "seam" in ds.coords
    n_panels = 2 + has_err + has_seam
    fig = new_figure(11, 2.3 * n_panels + 0.8)
    ratios = [1.2, 1.0] + [1.2] * has_err + [0.8] * has_seam
    axes = fig.subplots(n_panels, 1, sharex=True, height_ratios=ratios)
    iterations, factor = bin_time(ds["iterations"].sel(individual=individuals).astype(float), "max")
    t = nan_array(bin_time(ds["time"], "min")[0])
    failed = bin_time((~ds["converged"].sel(individual=individuals)).astype(float), "max")[0]
    it, bad = nan_array(iterations), nan_array(failed) > 0
    ax = axes[0]
    for i, name in enumerate(individuals):
        values = np.where(it[:, i] < 0, np.nan, it[:, i])
        ax.step(t, values, where="mid", color=color(i), lw=1.0, label=name)
        ax.plot(t[bad[:, i]], values[bad[:, i]], "x", color="#d62728", ms=4)
    cap = attr_dict(ds.attrs.get("solver_config")).get("n_iterations")
    if cap:
        ax.axhline(cap, color="0.3", ls="--", lw=0.8, label=f"cap ({cap})")
    ax.plot([], [], "x", color="#d62728", label="not converged")
    ax.set_ylabel("iterations")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8, ncols=min(len(individuals) + 2, 5), loc="lower right")
    ax.grid(alpha=0.3)
    n = ds.sizes["time"]
    size = max(RATE_MIN_FRAMES, math.ceil(n / RATE_BINS))
    rate = (~ds["converged"].sel(individual=individuals)).astype(float)
    rate = rate.coarsen(time=size, boundary="pad", coord_func="min").mean() * 100
    ax = axes[1]
    rt, rv = nan_array(rate["time"]), nan_array(rate.transpose("time", "individual"))
    for i in range(len(individuals)):
        ax.step(rt, rv[:, i], where="post", color=color(i), lw=1.2)
    ax.set_ylabel(f"not converged\n(% per {size} frames)")
    ax.set_ylim(-2, 102)
    ax.grid(alpha=0.3)
    row = 2
    if has_err:
        ax = axes[row]
        rms = nan_array(bin_time(ds["rms_error"].sel(individual=individuals), "max")[0])
        peak = nan_array(bin_time(ds["max_error"].sel(individual=individuals), "max")[0])
        for i in range(len(individuals)):
            ax.plot(t, rms[:, i], color=color(i), lw=1.0)
            ax.plot(t, peak[:, i], color=color(i), lw=0.8, ls="--", alpha=0.7)
        ax.plot([], [], color="0.3", label="RMS error")
        ax.plot([], [], color="0.3", ls="--", label="max error")
        if np.nanmax(np.r_[rms.ravel(), peak.ravel(), 0.0]) > 0:
            ax.set_yscale("log")
        ax.set_ylabel(error_label(ds))
        ax.legend(fontsize=8, loc="upper right")
        ax.grid(alpha=0.3, which="both")
        row += 1
    if has_seam:
        ax = axes[row]
        seam = ds["seam_disagreement"].sel(individual=individuals)
        index = np.asarray(ds["seam"].values, dtype=int)
        n_full = full.sizes["time"]
        st = nan_array(full["time"].isel(time=np.clip(index, 0, n_full - 1)))
        values = nan_array(seam.transpose("seam", "individual"))
        inside = (index > 0) & (index < n_full) & (st >= t[0]) & (st <= nan_array(ds["time"])[-1])
        for i in range(len(individuals)):
            ok = inside & np.isfinite(values[:, i])
            ax.vlines(st[ok], 0, values[ok, i], color=color(i), lw=1.5)
            ax.plot(st[ok], values[ok, i], "o", color=color(i), ms=4)
        if not (inside[:, None] & np.isfinite(values)).any():
            ax.text(0.5, 0.5, "no chunk seams", transform=ax.transAxes, ha="center")
        ax.set_ylabel("seam disagreement\n(rad or length)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel(time_label(ds))
    session = ds.attrs.get("session")
    fig.suptitle(
        f"Solver iterations and convergence{f' — {session}' if session else ''}"
        f"{binned_note(factor)}",
        fontsize=12,
    )
    return fig
