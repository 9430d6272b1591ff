"""What ``kinefit fit`` prints: the ``-b auto`` choice and the summary table of a fit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table

from flows.cli.observation_rows import image_scale_row
from flows.cli.output import q, say

__all__ = ["auto_plan", "fit_summary"]


def auto_plan(tracks: Path, keypoint_map: Any, calibrate: bool = True) -> Any:
    """``body_plan: auto``: the session's plan and map (:mod:`pipeline.fit.plan_choice`), said.

    Returns the :class:`~pipeline.fit.plan_choice.PlanChoice`; no good match is an
    error naming the tracks and the best candidates.
    """
    from pipeline.fit.plan_choice import choose_session_plan

    choice = choose_session_plan(
        tracks, source=str(tracks), keypoint_map=keypoint_map, calibrate=calibrate
    )
    match = choice.match
    unmatched = match.proposal.unmatched
    what = "as the file's own skeleton (BVH)" if choice.own else "by keypoint names"
    say(
        f"body plan {q(choice.name)} chosen {what}: {match.n_mapped} of "
        f"{match.n_keypoints} keypoints mapped"
        + (f" (unmatched: {q(', '.join(unmatched))})" if unmatched else "")
    )
    if choice.mapping is not None:
        say(q("  " + ", ".join(f"{k} -> {j}" for k, j in choice.mapping.items())))
    if choice.note:
        say(q(f"  {choice.note}"))
    return choice


def _speed_rows(report: Any, attrs: dict[str, Any], wall: float) -> list[tuple[str, str]]:
    """The solver's speed (store's ``timings``) and the wall time, each said for what it is.

    The solver's frames/s are frame-individuals over the chunks' summed solve seconds
    (one core's work, as the archive summary counts it); the wall time adds everything
    else of the command, which dominates a small fit.
    """
    solve = float((attrs.get("timings") or {}).get("solve_s") or 0.0)
    observation = attrs.get("observation") or {}
    estimated = observation.get("image_scale_source") == "estimated"
    work = report.n_frames * max(report.n_individuals, 1)
    solver = f"{work / solve:,.0f} per core, solving only" if solve > 0 else "n/a"
    fitted = report.n_frames * len(report.chunks_fitted) / max(report.n_chunks, 1)
    overall = f"{fitted / wall:,.0f} frames/s" if wall > 0 else "n/a"
    return [
        ("frames/s", solver),
        (
            "wall time",
            f"{wall:.3g} s ({overall}): with the cluster start, the input checks and scan, "
            + ("the image-scale estimate, " if estimated else "")
            + "reading and writing",
        ),
    ]


def fit_summary(report: Any, wall: float) -> Table:
    """The table of a finished fit: RMS over observed frames, stop reasons apart.

    RMS values are the store's own (its ``residual_unit``: pixels for a fit that
    compares pixels), the same numbers the report, plots, viewer and exports show.
    """
    import numpy as np

    from pipeline.solve.rules import STOP_REASONS, observed_only
    from pipeline.store.attrs import residual_unit
    from pipeline.store.fit import open_fit

    fit = open_fit(report.out)
    rms = fit["rms_error"].values  # in the store's residual_unit, as every reader sees it
    observation = fit.attrs.get("observation") or {}
    seam = fit["seam_disagreement"].values
    codes = fit["stop_reason"].values if "stop_reason" in fit else None
    if codes is not None:
        counts = np.bincount(codes[codes >= 0].ravel(), minlength=len(STOP_REASONS))
        stops = dict(zip(STOP_REASONS, counts, strict=False))
    else:  # an older store
        stops = {"max_iterations": int((~fit["converged"].values).sum())}
    seen = observed_only(rms, codes)
    unit = residual_unit(fit.attrs)
    table = Table(title=f"fit {report.out}", show_header=False, box=None)
    fitted = len(report.chunks_fitted)
    rows = [
        ("frames", f"{report.n_frames} x {report.n_individuals} individual(s)"),
        ("chunks", f"{report.n_chunks} ({fitted} fitted now, {report.n_chunks - fitted} resumed)"),
        *_speed_rows(report, fit.attrs, wall),
    ]
    if np.isfinite(seen).any():
        worst = int(np.nanargmax(np.nan_to_num(seen, nan=-1.0).max(axis=1)))
        rows += [
            ("median RMS", f"{np.nanmedian(seen):.4g} {unit}".strip()),
            ("worst RMS", f"{np.nanmax(seen):.4g} {unit} (frame {worst})".replace("  ", " ")),
        ]
    else:
        rows.append(("median RMS", "n/a: no frame has an observed keypoint"))
    rows.append(
        (
            "non-converged",
            f"{int(stops.get('max_iterations', 0))} at the iteration cap, "
            f"{int(stops.get('stalled', 0))} stalled (frame-individuals)",
        )
    )
    if int(stops.get("no_observations", 0)):
        rows.append(("no observations", f"{int(stops['no_observations'])} frame-individuals"))
    rows.append(("worst seam", "n/a" if np.all(np.isnan(seam)) else f"{np.nanmax(seam):.3g}"))
    if report.unmapped_keypoints:
        rows.append(("unmapped keypoints", ", ".join(report.unmapped_keypoints)))
    if observation.get("kind") == "image":
        rows.append(("image scale", image_scale_row(observation, fit.attrs)))
    for key, value in rows:
        table.add_row(f"[bold]{key}[/]", q(value))
    return table
