"""One figure comparing the sessions of an archive (from its summary table)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from pipeline.inspect.data.checks import InspectError
from pipeline.inspect.plots.figures import new_figure

__all__ = ["plot_archive_overview"]

_NEEDS = ("median_rms", "worst_rms", "non_converged_fraction", "limit_active_fraction")


def plot_archive_overview(summary: pd.DataFrame) -> Figure:
    """Compare sessions: RMS error, non-converged and limit-active fractions.

    Parameters
    ----------
    summary : pandas.DataFrame
        :func:`pipeline.inspect.summary_table` (or ``FitArchive.summary``).

    Returns
    -------
    matplotlib.figure.Figure
        Horizontal bars, one row per session: median and worst RMS error (log scale),
        non-converged frames (%), DOF entries at a limit (%).
    """
    missing = [c for c in _NEEDS if c not in summary.columns]
    if missing:
        raise InspectError(
            f"plot_archive_overview needs column(s) {', '.join(missing)} of the summary "
            "table; pass pipeline.inspect.summary_table(...) or FitArchive.summary"
        )
    names = [str(s) for s in summary.index]
    y = np.arange(len(names))
    units = {str(u) for u in summary.get("unit", pd.Series(dtype=str)) if u}
    unit = units.pop() if len(units) == 1 else "length units"
    fig = new_figure(11, max(2.6, 0.32 * len(names) + 1.6))
    ax_rms, ax_conv, ax_lim = fig.subplots(1, 3, sharey=True, width_ratios=[2, 1, 1])
    median = summary["median_rms"].to_numpy(dtype=float)
    worst = summary["worst_rms"].to_numpy(dtype=float)
    ax_rms.barh(y, worst, color="#fdae6b", label="worst")
    ax_rms.barh(y, median, height=0.45, color="#e6550d", label="median")
    if np.nanmin(np.r_[median, np.inf]) > 0:
        ax_rms.set_xscale("log")
    ax_rms.set_yticks(y, names, fontsize=min(9, max(5, 300 // max(len(names), 1))))
    ax_rms.set_ylim(len(names) - 0.5, -0.5)
    ax_rms.set_xlabel(f"RMS error ({unit})")
    ax_rms.legend(fontsize=8, loc="lower right")
    for ax, column, label, tint in (
        (ax_conv, "non_converged_fraction", "not converged (% of frames)", "#6baed6"),
        (ax_lim, "limit_active_fraction", "DOFs at a limit (% of entries)", "#9e9ac8"),
    ):
        ax.barh(y, summary[column].to_numpy(dtype=float) * 100, color=tint)
        ax.set_xlabel(label)
        ax.set_xlim(left=0)
    for ax in (ax_rms, ax_conv, ax_lim):
        ax.grid(axis="x", alpha=0.3, which="both")
    fig.suptitle(f"Archive overview: {len(names)} session(s)", fontsize=12)
    return fig
