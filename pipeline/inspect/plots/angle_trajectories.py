"""Angle trajectories for scientists: named angles in degrees, grouped by joint, +-1 SD bands.

The trajectories set each panel's y-axis (with the limits they come near); a band stays in
view as far as the trajectories' range beyond them (:func:`~pipeline.inspect.data.bands.band_axis`),
and one reaching further (near-singular geometry: a standard deviation of hundreds of degrees) is
clipped to the axis, with triangles on the axis edge where it was and a note of its largest
standard deviation in the panel (:data:`CLIP_LABEL` in the legend).

Behind the trajectories, light grey spans shade their gaps: the frames where no keypoint
constrained an angle of the panel (:func:`~pipeline.inspect.data.angle_sets.evidence_gaps`), so the
motion model bridged it or the prior held it. An angle without keypoint evidence in any
frame (the Unitree G1's ankle rolls) is marked "never observed" in its panel's legend
(and title, when no angle of the joint ever is) instead of shading the whole axis.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from pipeline.bodyplan import BodyPlan
from pipeline.inspect.data.angle_panels import (
    CLIP_LABEL,
    GAP_LABEL,
    gap_spans,
    never_note,
    panel_data,
    panel_gaps,
)
from pipeline.inspect.data.angle_sets import angle_set, evidence_gaps, with_named_angles
from pipeline.inspect.data.bands import clip_band
from pipeline.inspect.data.checks import InspectError, pick_individuals, pick_time
from pipeline.inspect.data.display import binned_note, time_label
from pipeline.inspect.plots.figures import panel_grid

__all__ = ["CLIP_GID", "GAP_STYLE", "clip_note", "plot_angle_trajectories"]

_DASHES = ("-", "--", ":", "-.")
_TINTS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd")
#: Shading of gaps: light grey, sparsely hatched (unlike the +-1 SD bands' plain fill).
GAP_STYLE = {"facecolor": "0.9", "edgecolor": "0.72", "hatch": "//", "lw": 0}
#: ``gid`` of a panel's clipping cues (edge markers and note).
CLIP_GID = "band_clipped"


def clip_note(worst: dict[str, float]) -> str:
    """A panel's note of its clipped bands: ``"±1 SD clipped (SD up to 400 deg)"``."""
    sizes = ", ".join(f"{value:.3g} {unit}" for unit, value in worst.items())
    return f"±1 SD clipped (SD up to {sizes})"


def plot_angle_trajectories(
    fit: xr.Dataset,
    *,
    individual: str | Sequence[str] | None = None,
    joints: str | Sequence[str] | None = None,
    time: slice | tuple[float, float] | None = None,
    plan: BodyPlan | None = None,
    ncols: int = 4,
) -> Figure:
    """One panel per joint: its angles over time, with limits and uncertainty bands.

    Parameters
    ----------
    fit : xarray.Dataset
        ``joint_angle (time, individual, angle)`` when present or computable from the
        body plan (named angles, :func:`~pipeline.inspect.data.angle_sets.with_named_angles`), else
        ``dof_value (time, individual, dof)``; ``dof_std`` / ``joint_angle_std`` add a
        +-1 SD band, ``limit_active`` red ticks where the solver held a DOF at a limit,
        ``dof_observable`` (or missing keypoints) grey spans over the gaps.
    individual : str or sequence of str, optional
        Default all; each individual gets its own line style.
    joints : str or sequence of str, optional
        Joint names (the part of an angle's name before ``/``); default all.
    time : slice or (start, stop), optional
        Time range (time-coordinate units, inclusive).
    plan : BodyPlan, optional
        For DOF kinds and limits; default the fit's stored plan.
    ncols : int
        Panels per row.

    Returns
    -------
    matplotlib.figure.Figure
        Angles in degrees, slides in the fit's length unit; limits dashed; gaps shaded
        (every individual's, merged; the module docstring).

    Raises
    ------
    InspectError
        No angles in the fit, an unknown individual or joint.
    """
    ds = with_named_angles(pick_time(fit, time), plan)
    angles = angle_set(ds, plan)
    individuals = pick_individuals(ds, individual)
    groups = dict(angles.groups)
    if joints is not None:
        wanted = [joints] if isinstance(joints, str) else list(joints)
        unknown = [j for j in wanted if j not in groups]
        if unknown:
            raise InspectError(
                f"no joint {', '.join(map(repr, unknown))} with angles; joints: {', '.join(groups)}"
            )
        groups = {j: groups[j] for j in wanted}
    panels = panel_data(ds, angles, individuals)
    t, factor = panels.t, panels.factor
    lines, bands, ticks = panels.lines, panels.stds, panels.active
    frame_t = np.asarray(ds["time"].values, dtype=float)  # gaps: frame by frame, unbinned
    gaps = {ind: evidence_gaps(ds, angles, ind, plan) for ind in individuals}
    shaded = False
    ncols = max(1, min(ncols, len(groups)))
    nrows = math.ceil(len(groups) / ncols)
    fig, axes = panel_grid(nrows, ncols, panel=(3.4, 2.0), top=0.7, bottom=1.0, sharex=True)
    clipped_any = False
    for ax, (joint, members) in zip(axes, groups.items(), strict=False):
        shade, never = panel_gaps(gaps, members)
        for x0, x1 in gap_spans(frame_t, shade) if shade is not None else []:
            ax.axvspan(x0, x1, zorder=0, **GAP_STYLE)
            shaded = True
        axis = panels.axis(angles, members)
        worst = {}  # unit -> the largest SD of a clipped band
        for j, a in enumerate(members):
            tint = _TINTS[j % len(_TINTS)]
            for i, ind in enumerate(individuals):
                y = lines[ind][:, a]
                ax.plot(t, y, color=tint, lw=1.0, ls=_DASHES[i % len(_DASHES)])
                if ind in bands:
                    sd = bands[ind][:, a]
                    if axis is None:
                        lower, upper, below, above = y - sd, y + sd, [], []
                    else:
                        lower, upper, below, above = clip_band(y, sd, *axis)
                    ax.fill_between(t, lower, upper, color=tint, alpha=0.2, lw=0)
                    for edge, hit, marker in ((0, below, "v"), (1, above, "^")):
                        if np.any(hit):
                            ax.plot(
                                t[hit],
                                np.full(int(np.sum(hit)), axis[edge]),
                                ls="",
                                marker=marker,
                                ms=3.5,
                                color=tint,
                                clip_on=False,
                                gid=CLIP_GID,
                            )
                    if np.any(below) or np.any(above):
                        unit = angles.units[a]
                        top = float(np.nanmax(sd[np.asarray(below) | np.asarray(above)]))
                        worst[unit] = max(worst.get(unit, 0.0), top)
                if ind in ticks and ticks[ind][:, a].any():
                    hit = ticks[ind][:, a]
                    ax.plot(t[hit], y[hit], "|", color="#d62728", ms=6, mew=1.2)
            lo, hi = angles.limits.get(angles.names[a], (-np.inf, np.inf))
            for bound in (lo, hi):
                if np.isfinite(bound):
                    ax.axhline(bound, color=tint, lw=0.8, ls="--", alpha=0.7)
        if axis is not None:
            ax.set_ylim(*axis)
        if worst:
            clipped_any = True
            ax.text(
                0.01,
                0.02,
                clip_note(worst),
                transform=ax.transAxes,
                fontsize=6.5,
                color="0.2",
                ha="left",
                va="bottom",
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.75, "pad": 1.0},
                gid=CLIP_GID,
            )
        short = [angles.names[a].split("/", 1)[-1] for a in members]
        units = sorted({angles.units[a] for a in members})
        # the legend names the angles; a joint none of whose angles is ever observed says so
        blind = all(len(never.get(a, [])) == len(individuals) for a in members)
        note = " — never observed" if blind else ""
        ax.set_title(f"{joint} ({', '.join(units)}){note}", fontsize=9)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3, lw=0.5)
        legend = [
            Line2D(
                [],
                [],
                color=_TINTS[j % len(_TINTS)],
                lw=1.5,
                label=s + never_note(never, a, individuals),
            )
            for j, (a, s) in enumerate(zip(members, short, strict=True))
        ]
        low, high = ax.get_ylim()  # headroom: the legend row above the trajectories
        ax.set_ylim(low, high + 0.25 * (high - low))
        ax.legend(
            handles=legend,
            fontsize=7,
            loc="upper right",
            ncols=len(legend),
            handlelength=1.2,
            handletextpad=0.4,
            columnspacing=0.8,
        )
    for ax in axes[len(groups) :]:
        ax.set_visible(False)
    for ax in axes[: len(groups)][-ncols:]:
        ax.set_xlabel(time_label(ds), fontsize=9)
        ax.xaxis.set_tick_params(labelbottom=True)
    handles = [
        Line2D([], [], color="0.3", ls=_DASHES[i % len(_DASHES)], label=ind)
        for i, ind in enumerate(individuals)
    ]
    handles.append(Line2D([], [], color="0.3", lw=0.8, ls="--", label="limit"))
    if bands:
        handles.append(Patch(color="0.3", alpha=0.2, label="±1 SD"))
    if clipped_any:
        handles.append(Line2D([], [], ls="", marker="^", ms=4, color="0.3", label=CLIP_LABEL))
    if any(v.any() for v in ticks.values()):
        handles.append(Line2D([], [], ls="", marker="|", color="#d62728", label="held at limit"))
    if shaded:
        handles.append(Patch(label=GAP_LABEL, **GAP_STYLE))
    height = fig.get_figheight()
    fig.legend(
        handles=handles,
        loc="lower center",
        bbox_to_anchor=(0.5, 0.05 / height),
        ncols=len(handles),
        fontsize=9,
    )
    source = "named joint angles" if angles.variable == "joint_angle" else "DOF values"
    session = ds.attrs.get("session")
    fig.suptitle(
        f"Angle trajectories{f' — {session}' if session else ''} ({source}){binned_note(factor)}",
        fontsize=12,
        y=1 - 0.15 / height,  # inches from the top: clear of the panels in a tall figure
    )
    return fig
