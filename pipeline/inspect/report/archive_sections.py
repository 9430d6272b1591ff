"""Archive-wide parts of the report: angle distributions and the error against the truth."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
import xarray as xr

from pipeline.inspect.data.checks import InspectError
from pipeline.inspect.data.truth import open_truth, truth_errors
from pipeline.inspect.plots.distributions import MAX_SAMPLES, plot_angle_distributions
from pipeline.inspect.report import html

__all__ = ["angle_distributions", "truth_table"]


def angle_distributions(archive: Mapping[str, xr.Dataset]) -> list[str]:
    """Angle distributions, one figure per body plan shared by two or more individuals."""
    plans: dict[str, dict[str, xr.Dataset]] = {}
    for key, fit in archive.items():
        plans.setdefault(str(fit.attrs.get("body_plan_sha256")), {})[key] = fit
    out = []
    for sha, fits in plans.items():
        if sum(fit.sizes.get("individual", 0) for fit in fits.values()) < 2:
            continue
        try:
            fig = plot_angle_distributions(fits)
        except InspectError as exc:
            out.append(html.note(f"Angle distributions not shown: {exc}"))
            continue
        which = f" Sessions with body plan {sha[:12]}." if len(plans) > 1 else ""
        caption = (
            "Each angle's distribution per session and individual (violins, median marked; "
            f"up to {MAX_SAMPLES} evenly spaced frames each), so a change between conditions "
            f"or animals shows. One colour per individual name.{which}"
        )
        out.append(html.figure(fig, caption, alt="angle distributions"))
    return out


def truth_table(archive: Mapping[str, xr.Dataset]) -> str:
    """Error against the known truth of every synthetic session ("" when none has one)."""
    rows = []
    for key, fit in archive.items():
        truth = open_truth(fit)
        if truth is None:
            continue
        try:
            table = truth_errors(fit, truth)
        except InspectError as exc:
            rows.append(pd.DataFrame({"problem": [str(exc)]}, index=[(key, "")]))
            continue
        table.index = [(key, i) for i in table.index]
        rows.append(table)
    if not rows:
        return ""
    table = pd.concat(rows)
    table.index = pd.Index([f"{k} / {i}" if i else k for k, i in table.index], name="session")
    units = {str(fit.attrs.get("unit") or "") for fit in archive.values()} - {""}
    unit = units.pop() if len(units) == 1 else "length units"
    table = table.rename(
        columns={
            "keypoint_rms": f"keypoint RMS ({unit})",
            "keypoint_p95": f"keypoint 95th pct ({unit})",
            "angle_rms": "angle RMS (deg)",
            "angle_max": "angle max (deg)",
            "root_rms": f"root position RMS ({unit})",
        }
    )
    return (
        '<p class="meaning">Synthetic sessions know their true motion: fitted minus '
        "noise-free keypoints, and fitted minus true angles (wrapped to +-180 deg).</p>\n"
        + html.table(table)
    )
