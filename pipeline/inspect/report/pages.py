"""HTML reports of one fit or of a whole archive: summary, plots, provenance, worst frames.

A report is one self-contained HTML file: the style sheet is inline, every static figure
is an embedded PNG, the interactive viewers are plotly figures drawn by one copy of plotly's
JavaScript embedded in the page head, and nothing is fetched from the network, so it can
be mailed, archived or opened offline. :func:`session_report_html` and
:func:`archive_report_html` build the text from opened fits; :func:`write_session_report`
and :func:`write_archive_report` open the stores and write the file (atomically: a
half-written report never appears under ``out``).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import pandas as pd
import xarray as xr

from pipeline.bodyplan.model import BodyPlan
from pipeline.errors import KinefitError
from pipeline.inspect.data.checks import body_plan_of, time_unit
from pipeline.inspect.data.fit_archive import FitArchive, open_archive
from pipeline.inspect.data.summaries import provenance, summary_table, worst_frames
from pipeline.inspect.plots.archive_overview import plot_archive_overview
from pipeline.inspect.report import html
from pipeline.inspect.report.archive_sections import angle_distributions, truth_table
from pipeline.inspect.report.calibration_section import calibration_section
from pipeline.inspect.report.sections import (
    FORMATS,
    anchor,
    generated_note,
    meanings,
    nav,
    observed_or_reason,
    session_sections,
)
from pipeline.store.atomic import check_writable, write_text_atomic
from pipeline.store.attrs import residual_unit
from pipeline.store.fit import open_fit

__all__ = [
    "archive_report_html",
    "session_report_html",
    "write_archive_report",
    "write_session_report",
]

#: Sessions of an archive report that get their full set of plots, by default.
DETAILED_SESSIONS = 10


def session_report_html(
    fit: xr.Dataset,
    observed: xr.DataArray | None = None,
    *,
    title: str | None = None,
    worst: int = 10,
    reason: str = "",
    truth: xr.Dataset | None | str = "auto",
) -> str:
    """The HTML report of one fit.

    Parameters
    ----------
    fit : xarray.Dataset
        An opened fit store.
    observed : xarray.DataArray, optional
        Observed keypoints for the skeleton plot (:func:`pipeline.inspect.open_observed`).
    title : str, optional
        Default ``kinefit report — <session>``.
    worst : int
        Worst frames listed.
    reason : str
        Note shown above the plots (e.g. why observed keypoints are missing).
    truth : xarray.Dataset, None or "auto"
        A synthetic session's known truth (:attr:`pipeline.synth.SynthSession.truth`) for
        the "Against the known truth" section; "auto" looks for it
        (:func:`pipeline.inspect.data.truth.open_truth`).

    Returns
    -------
    str
        A complete, self-contained HTML document.
    """
    key = str(fit.attrs.get("session") or "session")
    title = title or f"kinefit report — {key}"
    sections = {
        "Summary": "summary",
        "Worst frames": "worst-frames",
        "Viewer": "viewer",
        "Plots": "plots",
        "Provenance": "provenance",
    }
    body = session_sections("", fit, observed, reason, worst=worst, truth=truth)
    return html.page(title, generated_note() + nav(sections) + body, interactive=True)


def _run_plans(
    archive: Mapping[str, xr.Dataset], templates: Iterable[BodyPlan] = ()
) -> Iterator[BodyPlan]:
    """``templates``, then each distinct body plan the archive's fits were made with.

    The candidate templates of the calibration section: a session fitted with the template
    (one of several identities, or a run without calibration) stores it in its attrs. A
    stored plan that cannot be read is skipped (the provenance table says so). Each is
    named after the first fit that stores it (for the caption).
    """
    yield from templates
    seen = set()
    for session, fit in archive.items():
        key = fit.attrs.get("body_plan_sha256") or fit.attrs.get("body_plan")
        if not key or key in seen:
            continue
        seen.add(key)
        try:
            plan = body_plan_of(fit)
        except (KinefitError, ValueError):
            continue
        if plan is not None:
            yield dataclasses.replace(plan, source=f"stored with the fit {session}")


def archive_report_html(
    archive: FitArchive | Mapping[str, xr.Dataset],
    *,
    title: str | None = None,
    worst: int = 20,
    detailed: int = DETAILED_SESSIONS,
    observed: bool = True,
    templates: Iterable[BodyPlan] = (),
) -> str:
    """The HTML report of an archive: overview, worst frames, provenance, session details.

    Parameters
    ----------
    archive : FitArchive or mapping
        Session key -> fit (from :func:`pipeline.inspect.open_archive`).
    title : str, optional
    worst : int
        Worst frames listed across the archive (and per detailed session: 10).
    detailed : int
        Sessions that get their full plots; beyond that, the ones with the worst RMS
        error (the others stay in the tables).
    observed : bool
        Open each detailed session's tracks store for the observed keypoints.
    templates : iterable of BodyPlan
        The run's template body plan(s), if the caller knows them: the calibration
        section checks each calibration's template against these and against the plans
        the fits were made with (by sha256) before rebuilding it from the record.

    Returns
    -------
    str
        A complete, self-contained HTML document.
    """
    root = getattr(archive, "root", None)
    title = title or f"kinefit archive report — {root or 'fits'}"
    summary = getattr(archive, "summary", None)
    summary = summary if summary is not None else summary_table(archive)
    problems = getattr(archive, "problems", {}) or {}
    chosen = list(archive)
    if len(chosen) > detailed:
        ranked = summary["worst_rms"].sort_values(ascending=False, na_position="first")
        keep = set(ranked.index[:detailed])
        chosen = [k for k in chosen if k in keep]
    links = {k: f"#{anchor('session', k)}" for k in chosen}
    viewers = {k: anchor(anchor("session", k), "viewer-plot") for k in chosen}
    overview = [html.table(summary, FORMATS, links=links)] if len(archive) else []
    if not len(archive):
        overview.append(html.note(f"No complete fit stores found under {root}."))
    else:
        overview.append(meanings())
        fig = plot_archive_overview(summary)
        overview.append(html.figure(fig, "Sessions compared.", alt="archive overview"))
        overview += angle_distributions(archive)
    if problems:
        rows = pd.DataFrame({"problem": list(problems.values())}, index=list(problems))
        overview.append("<p>Left out:</p>\n" + html.table(rows.rename_axis("store")))
    frames = [
        worst_frames(fit, worst).assign(session=k, unit=residual_unit(fit.attrs))
        for k, fit in archive.items()
    ]
    frames = [f for f in frames if not f.empty]
    top = pd.concat(frames) if frames else pd.DataFrame()
    if not top.empty:
        top = top.sort_values("rms_error", ascending=False).head(worst)
        top = top[["session", *[c for c in top.columns if c != "session"]]]
        top["view"] = [
            html.seek_link(viewers[s], k, "show in viewer") if s in viewers else ""
            for s, k in zip(top["session"], top["frame"], strict=True)
        ]
        units = {time_unit(fit) for fit in archive.values()}
        if len(units) == 1:
            top = top.rename(columns={"time": f"time ({units.pop()})"})
    worst_html = (
        html.table(top, index=False, raw=("view",))
        if not top.empty
        else "<p>No observed frames.</p>"
    )
    keys = ["body_plan_sha256", "kinefit_version", "input_sha256", "fingerprint", "finished"]
    prov = pd.DataFrame(
        {k: [fit.attrs.get(c) for c in keys] for k, fit in archive.items()}, index=keys
    ).T.rename_axis("session")
    prov.columns = [
        "body plan sha256",
        "kinefit version",
        "input fingerprint",
        "fit fingerprint",
        "finished",
    ]
    prov_html = html.table(prov, links=links) if len(archive) else ""
    configs = {k: provenance(fit).get("solver config", {}) for k, fit in archive.items()}
    distinct = {html.format_value(c) for c in configs.values()}
    if len(distinct) == 1:
        prov_html += "<p>Solver config (all sessions):</p>\n"
        prov_html += html.key_values(next(iter(configs.values())))
    for k, config in configs.items() if len(distinct) > 1 else ():
        prov_html += f"<p>Solver config of {html.escape(k)}:</p>\n" + html.key_values(config)
    details = []
    for k in chosen:
        fit = archive[k]
        seen, reason = observed_or_reason(fit) if observed else (None, "")
        inner = session_sections(anchor("session", k), fit, seen, reason, level=3)
        details.append(html.section(anchor("session", k), f"Session {k}", inner))
    if len(chosen) < len(archive):
        details.insert(
            0,
            html.note(
                f"Full plots for the {len(chosen)} sessions with the worst RMS error; the "
                f"other {len(archive) - len(chosen)} are in the tables above."
            ),
        )
    truth_html = truth_table(archive)
    sections = {"Summary": "summary"}
    if truth_html:
        sections["Against the truth"] = "truth"
    sections.update({"Worst frames": "worst-frames", "Provenance": "provenance"})
    sections["Sessions"] = "sessions"
    body = [
        generated_note(),
        nav(sections),
        html.section("summary", "Summary", "".join(overview)),
        html.section("truth", "Against the known truth", truth_html) if truth_html else "",
        html.section("worst-frames", f"Worst frames (top {worst} across sessions)", worst_html),
        html.section("provenance", "Provenance", prov_html),
        calibration_section(
            Path(root).parent / "calibrations" if root else None,
            _run_plans(archive, templates),
        ),
        html.section("sessions", "Sessions", "".join(details)),
    ]
    return html.page(title, "".join(body), interactive=bool(chosen))


def _write(text: str, out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    check_writable(out.parent, "the report")
    return write_text_atomic(out, text)


def write_session_report(
    fit_path: str | Path,
    out: str | Path | None = None,
    *,
    title: str | None = None,
    worst: int = 10,
) -> Path:
    """Write the HTML report of one fit store.

    Parameters
    ----------
    fit_path : str or Path
        A complete fit store.
    out : str or Path, optional
        The HTML file; default ``<store without .zarr>.report.html`` beside the store.
    title : str, optional
        Page title; default ``kinefit report — <session>``.
    worst : int
        Worst frames listed.

    Returns
    -------
    Path
        ``out``.

    Raises
    ------
    FileNotFoundError, pipeline.store.fit.FitStoreError
        No complete fit store at ``fit_path``.
    """
    fit_path = Path(fit_path)
    out = (
        Path(out)
        if out
        else fit_path.with_name(f"{fit_path.name.removesuffix('.zarr')}.report.html")
    )
    fit = open_fit(fit_path)
    observed, reason = observed_or_reason(fit)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices in empty sessions
        text = session_report_html(fit, observed, reason=reason, title=title, worst=worst)
    return _write(text, out)


def write_archive_report(
    fits_root: str | Path,
    out: str | Path | None = None,
    *,
    title: str | None = None,
    worst: int = 20,
    detailed: int = DETAILED_SESSIONS,
    observed: bool = True,
    templates: Iterable[BodyPlan] = (),
) -> Path:
    """Write the HTML report of every fit under ``fits_root`` (the reprocess flow's report).

    Parameters
    ----------
    fits_root : str or Path
        Folder of fit stores (see :func:`pipeline.inspect.open_archive`).
    out : str or Path, optional
        The HTML file; default ``<fits_root>/report.html``.
    title : str, optional
        Page title; default ``kinefit archive report — <fits_root>``.
    worst : int
        Worst frames listed across the archive.
    detailed : int
        Sessions given their full plots (the worst by RMS error when there are more).
    observed : bool
        Draw the observed keypoints (opens each detailed session's tracks store).
    templates : iterable of BodyPlan
        The run's template body plan(s), for the calibration section
        (:func:`archive_report_html`).

    Returns
    -------
    Path
        ``out``. An archive without complete fits still gets a report saying so.

    Raises
    ------
    FileNotFoundError
        ``fits_root`` does not exist.
    """
    archive = open_archive(fits_root)
    out = Path(out) if out else Path(fits_root) / "report.html"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        text = archive_report_html(
            archive,
            title=title,
            worst=worst,
            detailed=detailed,
            observed=observed,
            templates=templates,
        )
    return _write(text, out)
