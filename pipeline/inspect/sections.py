"""The sections of a session's report: summary, worst frames, plots, provenance (HTML)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping

import pandas as pd
import xarray as xr

from pipeline.inspect import html
from pipeline.inspect.archive import open_observed
from pipeline.inspect.plots import (
    plot_dof_trajectories,
    plot_error_distributions,
    plot_residual_heatmap,
    plot_skeleton_frame,
    plot_solver_convergence,
)
from pipeline.inspect.tables import individual_summary, provenance, summary_table, worst_frames
from pipeline.inspect.validate import time_unit
from pipeline.provenance.fingerprint import kinefit_version

__all__ = ["FORMATS", "anchor", "generated_note", "nav", "observed_or_reason", "session_sections"]

PERCENT_COLUMNS = ("non_converged_fraction", "limit_active_fraction", "observed_fraction")
FORMATS = {c: html.percent for c in PERCENT_COLUMNS}


def anchor(*parts: str) -> str:
    """An HTML id made of ``parts`` (characters other than letters, digits, _ and - -> _)."""
    return "-".join(re.sub(r"[^A-Za-z0-9_-]+", "_", p) for p in parts if p)


def observed_or_reason(fit: xr.Dataset) -> tuple[xr.DataArray | None, str]:
    """The fit's observed keypoints (:func:`open_observed`), or None and why not."""
    try:
        return open_observed(fit), ""
    except (FileNotFoundError, ValueError, OSError) as exc:
        return None, f"Observed keypoints not shown: {exc}"


def _plots(fit: xr.Dataset, observed: xr.DataArray | None, reason: str, prefix: str) -> str:
    unit = fit.attrs.get("unit") or "length units"
    parts = [
        (
            plot_skeleton_frame,
            {"observed": observed},
            "Observed (black crosses) and fitted (coloured skeleton) keypoints at the frame "
            f"with the worst RMS error, in 3D and three orthographic projections ({unit}).",
        ),
        (
            plot_dof_trajectories,
            {},
            "DOF values over time; red shading beyond a joint limit, orange beyond a ball "
            "joint's swing cone; red ticks where the solver held a DOF at its limit.",
        ),
        (
            plot_residual_heatmap,
            {},
            f"Residual distance per keypoint and frame ({unit}); grey where unobserved.",
        ),
        (
            plot_error_distributions,
            {},
            "Residual distribution per keypoint (box 25-75 %, whiskers 5-95 %, cross at "
            "the maximum) and the share of frames each keypoint was observed.",
        ),
        (
            plot_solver_convergence,
            {},
            "Solver iterations per frame, non-converged rate, errors over time and the DOF "
            "disagreement at chunk seams.",
        ),
    ]
    out = [html.note(reason)] if reason else []
    for func, kwargs, caption in parts:
        fig = func(fit, **kwargs)
        out.append(html.figure(fig, caption, alt=f"{func.__name__} of {prefix}"))
    return "".join(out)


def _worst_table(frames: pd.DataFrame, fit_unit: str, t_unit: str) -> str:
    if frames.empty:
        return "<p>No observed frames.</p>\n"
    frames = frames.rename(
        columns={
            "time": f"time ({t_unit})",
            "rms_error": f"rms error ({fit_unit})",
            "max_error": f"max error ({fit_unit})",
        }
    )
    return html.table(frames, index=False)


def session_sections(
    key: str,
    fit: xr.Dataset,
    observed: xr.DataArray | None = None,
    reason: str = "",
    *,
    worst: int = 10,
    level: int = 2,
) -> str:
    """The sections of one session: summary, plots, provenance, worst frames.

    Section ids are ``<key>-summary``, ``<key>-plots``, ``<key>-provenance`` and
    ``<key>-worst-frames`` (``key`` made anchor-safe; without a key: ``summary``, ...).
    """
    unit = str(fit.attrs.get("unit") or "length units")
    t_unit = time_unit(fit)
    summary = summary_table({key: fit}).iloc[0]
    head = {
        "frames": int(summary["frames"]),
        "individuals": int(summary["individuals"]),
        f"median RMS ({unit})": summary["median_rms"],
        f"worst RMS ({unit})": summary["worst_rms"],
        f"worst at ({t_unit})": summary["worst_time"],
        "not converged": html.percent(summary["non_converged_fraction"]),
        "DOF entries at a limit": html.percent(summary["limit_active_fraction"]),
        "max seam disagreement (rad or length)": summary["max_seam_disagreement"],
    }
    per_individual = individual_summary(fit).rename(
        columns={
            "median_rms": f"median RMS ({unit})",
            "worst_rms": f"worst RMS ({unit})",
            "worst_time": f"worst at ({t_unit})",
        }
    )
    body = [
        html.section(
            anchor(key, "summary"),
            "Summary",
            html.key_values(head) + html.table(per_individual, FORMATS),
            level,
        ),
        html.section(
            anchor(key, "worst-frames"),
            f"Worst frames (top {worst} by RMS error)",
            _worst_table(worst_frames(fit, worst), unit, t_unit),
            level,
        ),
        html.section(
            anchor(key, "plots"),
            "Plots",
            _plots(fit, observed, reason, key or str(fit.attrs.get("session"))),
            level,
        ),
        html.section(
            anchor(key, "provenance"), "Provenance", html.key_values(provenance(fit)), level
        ),
    ]
    return "".join(body)


def nav(links: Mapping[str, str]) -> str:
    """A navigation bar: title -> section id."""
    items = "".join(f'<a href="#{html.escape(a)}">{html.escape(t)}</a>' for t, a in links.items())
    return f"<nav>{items}</nav>\n"


def generated_note() -> str:
    """A line saying which kinefit made the page, and when (UTC)."""
    when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        f'<p class="muted">Generated by kinefit {html.escape(kinefit_version())} on {when}.</p>\n'
    )
