"""The report's subject-calibration section: per identity, the body it was fitted with.

For every stored calibration (``<outputs.root>/calibrations/<identity>.json``,
:mod:`pipeline.calibrate.identity`): the segment scales with their standard errors (a
plot and a table), the keypoint RMS of the calibration frames before and after, the
sessions and their own scales, the sessions flagged as disagreeing, and the template and
calibrated bodies drawn on one scale (:mod:`pipeline.inspect.plots.calibrated_bodies`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd

from pipeline.bodyplan.model import BodyPlan
from pipeline.calibrate.calibration_record import Calibration, load_calibration
from pipeline.errors import KinefitError
from pipeline.inspect.plots.calibrated_bodies import (
    calibration_bodies,
    find_template,
    plot_calibration_bodies,
)
from pipeline.inspect.plots.figures import new_figure
from pipeline.inspect.report import html

__all__ = ["calibration_section", "identity_html"]


def _vector(value) -> str:
    """A marker table's cell: a vector at 6 significant digits (the record keeps more)."""
    if isinstance(value, list | tuple):
        return "[" + ", ".join(f"{float(v):.6g}" for v in value) + "]"
    return html.format_value(value)


def _scales_figure(cal: Calibration):
    segments = [s for s in cal.record["segments"] if s["group"] is not None]
    fig = new_figure(7, 0.22 * len(segments) + 1.2)
    ax = fig.add_subplot()
    names = [s["joint"] for s in segments]
    ax.errorbar(
        [s["scale"] for s in segments],
        range(len(segments)),
        xerr=[2 * s["scale_std"] for s in segments],
        fmt="o",
        ms=3,
        capsize=2,
    )
    for i, s in enumerate(segments):
        if not s["observed"]:
            ax.annotate(
                "not observed",
                (s["scale"], i),
                fontsize=7,
                xytext=(4, 0),
                textcoords="offset points",
                va="center",
            )
    ax.axvline(1.0, color="0.6", lw=0.8)
    ax.axvline(cal.global_scale, color="C1", lw=0.8, ls="--", label="global scale")
    ax.set_yticks(range(len(segments)), names, fontsize=7)
    ax.set_xlabel("segment length / template length (error bars: 2 SE)")
    ax.legend(fontsize=7)
    return fig


def _bodies_html(cal: Calibration, identity: str, templates: Sequence[BodyPlan]) -> str:
    """The template and calibrated bodies' figure, or a note saying why it is missing."""
    template, source = find_template(cal, templates)
    if template is None:
        return html.note(f"Template and calibrated body not drawn: {source}.")
    try:
        bodies = calibration_bodies(cal, template, source)
    except (KinefitError, ValueError) as exc:
        return html.note(f"Template and calibrated body not drawn: {exc}.")
    scale = cal.record["global_scale"]
    title = (
        f"{identity}: template and calibrated body, neutral pose — global scale "
        f"{scale['value']:.4f} ± {scale['std']:.4f}"
    )
    fig = plot_calibration_bodies(bodies, title=title, unit=cal.plan.unit or "")
    caption = (
        "Neutral pose of the template (grey) and of the calibrated body (blue), root at "
        "the origin, one scale for both bodies and every axis; diamonds are the markers "
        f"(keypoints with free offsets). Template: {source}."
    )
    return html.figure(fig, caption, alt=f"template and calibrated body of {identity}")


def identity_html(cal: Calibration, templates: Iterable[BodyPlan] = ()) -> str:
    """One identity's part of the section.

    Parameters
    ----------
    cal : Calibration
    templates : iterable of BodyPlan
        Plans that may be its template (matched by sha256); without a match the template
        is rebuilt from the calibration record.

    Returns
    -------
    str
        HTML: facts, the bodies' figure, the segment scales (figure and table), the
        sessions' scales and the markers.
    """
    rec = cal.record
    identity = str(rec.get("identity") or "")
    unit = rec.get("residual_unit") or cal.plan.unit or ""  # px through cameras
    kind = "reprojection" if rec.get("observation") == "cameras" else "keypoint"
    facts = {
        f"{kind} RMS, template": f"{rec['rms_before']:.4g} {unit}",
        f"{kind} RMS, calibrated": f"{rec['rms_after']:.4g} {unit}",
        "global scale": f"{rec['global_scale']['value']:.4f} ± {rec['global_scale']['std']:.4f}",
        "frames": rec["n_frames"],
        "iterations": f"{rec['iterations']} ({'' if rec['converged'] else 'not '}converged)",
        "template sha256": rec["template_sha256"][:16],
        "created": rec.get("created", ""),
    }
    out = [html.key_values(facts)]
    if rec.get("flagged"):
        out.append(
            html.note(
                "Sessions whose size disagrees with this identity's other sessions (growth, "
                f"or a mislabeled animal?): {', '.join(rec['flagged'])}"
            )
        )
    out.append(_bodies_html(cal, identity, list(templates)))
    out.append(html.figure(_scales_figure(cal), "Segment scales.", alt="segment scales"))
    table = pd.DataFrame(rec["segments"]).set_index("joint")
    out.append(html.table(table.drop(columns=["group", "template_offset"], errors="ignore")))
    scales = rec.get("session_scales") or {}
    if scales:
        rows = pd.DataFrame({"scale against the calibrated body": scales}).rename_axis("session")
        out.append(html.table(rows))
    if rec.get("markers"):
        markers = pd.DataFrame(rec["markers"]).set_index("joint")
        out.append(html.table(markers, dict.fromkeys(markers.columns, _vector)))
    return "".join(out)


def calibration_section(folder: str | Path | None, templates: Iterable[BodyPlan] = ()) -> str:
    """The section over every calibration in ``folder`` ('' when there are none).

    Parameters
    ----------
    folder : str or Path or None
        ``<outputs.root>/calibrations``.
    templates : iterable of BodyPlan
        Candidate templates (e.g. the run's body plan), see :func:`identity_html`.

    Returns
    -------
    str
        HTML; one subsection per calibration, a note per unreadable file.
    """
    if folder is None or not Path(folder).is_dir():
        return ""
    templates = list(templates)
    parts = []
    for path in sorted(Path(folder).rglob("*.json")):
        try:
            cal = load_calibration(path)
        except Exception as exc:  # noqa: BLE001 - one unreadable file is named, not fatal
            parts.append(html.note(f"{path.name}: not shown ({exc})"))
            continue
        identity = str(cal.record.get("identity") or path.stem)
        parts.append(
            html.section(
                f"calibration-{identity}", identity, identity_html(cal, templates), level=3
            )
        )
    if not parts:
        return ""
    return html.section("calibration", "Subject calibration", "".join(parts))
