"""The sections of a session's report: summary, truth, worst frames, viewer, plots, provenance."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping

import pandas as pd
import xarray as xr

from pipeline.inspect.data.checks import time_unit
from pipeline.inspect.data.fit_archive import open_observed
from pipeline.inspect.data.observation import (
    observation_kind,
    on_image_plane,
    unobservable_note,
)
from pipeline.inspect.data.summaries import (
    individual_summary,
    provenance,
    summary_table,
    worst_frames,
)
from pipeline.inspect.data.truth import open_truth, truth_errors, truth_joint_errors
from pipeline.inspect.plots.angle_trajectories import plot_angle_trajectories
from pipeline.inspect.plots.convergence import plot_solver_convergence
from pipeline.inspect.plots.residuals import plot_error_distributions, plot_residual_heatmap
from pipeline.inspect.plots.skeleton_frame import plot_skeleton_frame
from pipeline.inspect.report import html
from pipeline.inspect.viewer.figure import viewer_spec
from pipeline.provenance.fingerprint import kinefit_version
from pipeline.store.attrs import residual_unit

__all__ = [
    "FORMATS",
    "LIMIT_ACTIVE_MEANING",
    "NOT_CONVERGED_MEANING",
    "anchor",
    "generated_note",
    "meanings",
    "nav",
    "observed_or_reason",
    "session_sections",
    "truth_section",
]

PERCENT_COLUMNS = ("non_converged_fraction", "limit_active_fraction", "observed_fraction")
FORMATS = {c: html.percent for c in PERCENT_COLUMNS}
#: What the report's "not converged" numbers count.
NOT_CONVERGED_MEANING = (
    "Not converged: the share of frames (per individual) where the solver did not meet its "
    "tolerances (largest position step under position_tolerance, largest angle step under "
    "angle_tolerance) within n_iterations steps of the solver config. Such a frame keeps "
    "its last estimate, which is often close: its RMS error says how close."
)
#: What the report's "limit active" numbers count.
LIMIT_ACTIVE_MEANING = (
    "Limit active: the share of (frame, individual, DOF) entries where clamping to a limit "
    "of the body plan (a hinge's range, a ball joint's swing cone or twist range) changed "
    "the DOF on the solver's last step, so the fit sits on that limit. A few are normal at "
    "extreme poses; many at one joint mean its limits are too tight for this animal, or "
    "its keypoints are swapped."
)

#: The summary's "observed" entry per observation kind.
OBSERVED_AS = {
    "3d": "3D keypoints",
    "cameras": "2D keypoints through calibrated cameras (3D fit)",
    "image": "2D keypoints of one view (fit on the image plane)",
}


def meanings() -> str:
    """The two definitions, as a paragraph each."""
    return "".join(
        f'<p class="meaning">{html.escape(t)}</p>\n'
        for t in (NOT_CONVERGED_MEANING, LIMIT_ACTIVE_MEANING)
    )


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
    residual = residual_unit(fit.attrs)
    parts = [
        (
            plot_skeleton_frame,
            {"observed": observed},
            "Observed (black crosses) and fitted (coloured skeleton) keypoints at the frame "
            "with the worst RMS error, "
            + (
                "on the image plane"
                if on_image_plane(fit)
                else "in 3D and three orthographic projections"
            )
            + f" ({unit}).",
        ),
        (
            plot_angle_trajectories,
            {},
            "Angles over time, one panel per joint (named angles when the fit has them, DOF "
            "names otherwise; degrees, slides in length units); dashed lines at the body "
            "plan's limits (a ball joint's swing cone half-angles), shaded +-1 SD when the fit "
            "has uncertainties, red ticks where the solver held a DOF at a limit.",
        ),
        (
            plot_residual_heatmap,
            {},
            f"Residual distance per keypoint and frame ({residual}); grey where unobserved.",
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


def _worst_table(frames: pd.DataFrame, fit_unit: str, t_unit: str, viewer: str = "") -> str:
    if frames.empty:
        return "<p>No observed frames.</p>\n"
    if viewer:
        frames = frames.assign(
            view=[html.seek_link(viewer, k, "show in viewer") for k in frames["frame"]]
        )
    frames = frames.rename(
        columns={
            "time": f"time ({t_unit})",
            "rms_error": f"rms error ({fit_unit})",
            "max_error": f"max error ({fit_unit})",
        }
    )
    return html.table(frames, index=False, raw=("view",))


def truth_section(fit: xr.Dataset, truth: xr.Dataset) -> str:
    """Tables of the fit's error against the known truth of a synthetic session."""
    unit = str(fit.attrs.get("unit") or "length units")
    per = truth_errors(fit, truth).rename(
        columns={
            "keypoint_rms": f"keypoint RMS ({unit})",
            "keypoint_p95": f"keypoint 95th pct ({unit})",
            "angle_rms": "angle RMS (deg)",
            "angle_max": "angle max (deg)",
            "root_rms": f"root position RMS ({unit})",
        }
    )
    joints = truth_joint_errors(fit, truth)
    worst = joints.sort_values("rms", ascending=False).head(8)
    text = (
        '<p class="meaning">This session is synthetic: its true motion is known. Keypoint '
        "error: fitted minus noise-free keypoints (not the residual, which measures the "
        "fit against the noisy observations); angle error wrapped to +-180 deg.</p>\n"
    )
    return (
        text
        + html.table(per)
        + "<p>DOFs with the largest RMS error against the truth:</p>\n"
        + html.table(worst)
    )


def viewer_section(
    fit: xr.Dataset, observed: xr.DataArray | None, div_id: str, keep: list[int]
) -> str:
    """The interactive viewer of a session (the page must embed plotly's JavaScript)."""
    spec = viewer_spec(fit, observed, keep_frames=keep)
    note = spec["layout"]["meta"]["kinefit_viewer"]["note"]
    caption = (
        "Drag to rotate, scroll to zoom; play at 0.25x, 1x or 4x real time, or move the "
        "slider. Coloured: the fitted skeleton of each individual; black crosses: observed "
        "keypoints; grey rings: keypoints missing at that frame; red rings: residual above "
        "the threshold in the legend; orange diamonds: joints with a DOF held at a limit. "
        "Right: the chosen joint's angles (menu) and the RMS error, with the time cursor. " + note
    )
    return html.plotly_figure(spec, div_id, caption)


def session_sections(
    key: str,
    fit: xr.Dataset,
    observed: xr.DataArray | None = None,
    reason: str = "",
    *,
    worst: int = 10,
    level: int = 2,
    truth: xr.Dataset | None | str = "auto",
    viewer: bool = True,
) -> str:
    """The sections of one session: summary, truth, worst frames, viewer, plots, provenance.

    Section ids are ``<key>-summary``, ``<key>-truth`` (synthetic sessions only),
    ``<key>-worst-frames``, ``<key>-viewer``, ``<key>-plots`` and ``<key>-provenance``
    (``key`` made anchor-safe; without a key: ``summary``, ...); the viewer's plotly div
    is ``<key>-viewer-plot``. ``truth="auto"`` looks for a synthetic session's truth
    (:func:`pipeline.inspect.data.truth.open_truth`). With ``viewer``, the page must embed
    plotly's JavaScript (``html.page(..., interactive=True)``).
    """
    unit = residual_unit(fit.attrs)  # the RMS errors' unit (pixels for 2-D fits)
    t_unit = time_unit(fit)
    summary = summary_table({key: fit}).iloc[0]
    head = {
        "observed": OBSERVED_AS[observation_kind(fit)],
        "frames": int(summary["frames"]),
        "individuals": int(summary["individuals"]),
        f"median RMS ({unit})": summary["median_rms"],
        f"worst RMS ({unit})": summary["worst_rms"],
        f"worst at ({t_unit})": summary["worst_time"],
        "not converged (of frames)": html.percent(summary["non_converged_fraction"]),
        "limit active (of DOF entries)": html.percent(summary["limit_active_fraction"]),
        "max seam disagreement (rad or length)": summary["max_seam_disagreement"],
    }
    per_individual = individual_summary(fit).rename(
        columns={
            "median_rms": f"median RMS ({unit})",
            "worst_rms": f"worst RMS ({unit})",
            "worst_time": f"worst at ({t_unit})",
        }
    )
    if isinstance(truth, str):
        truth = open_truth(fit)
    frames = worst_frames(fit, worst)
    plot_id = anchor(key, "viewer-plot") if viewer and "fitted_position" in fit else ""
    body = [
        html.section(
            anchor(key, "summary"),
            "Summary",
            html.key_values(head)
            + (html.note(blind) if (blind := unobservable_note(fit)) else "")
            + meanings()
            + html.table(per_individual, FORMATS),
            level,
        ),
    ]
    if truth is not None:
        body.append(
            html.section(
                anchor(key, "truth"), "Against the known truth", truth_section(fit, truth), level
            )
        )
    body.append(
        html.section(
            anchor(key, "worst-frames"),
            f"Worst frames (top {worst} by RMS error)",
            _worst_table(frames, unit, t_unit, plot_id),
            level,
        )
    )
    if plot_id:
        keep = [int(k) for k in frames["frame"]] if not frames.empty else []
        body.append(
            html.section(
                anchor(key, "viewer"),
                "Viewer",
                viewer_section(fit, observed, plot_id, keep),
                level,
            )
        )
    body += [
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
