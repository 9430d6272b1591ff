"""Angle trajectories for scientists: named angles in degrees, grouped by joint, +-1 SD bands."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from pipeline.bodyplan import BodyPlan
from pipeline.inspect.angles import angle_set, with_named_angles
from pipeline.inspect.plots.common import bin_time, binned_note, panel_grid, time_label
from pipeline.inspect.validate import InspectError, pick_individuals, pick_time

__all__ = ["plot_angle_trajectories"]

_DASHES = ("-", "--", ":", "-.")
_TINTS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd")


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
        body plan (named angles, :func:`~pipeline.inspect.angles.with_named_angles`), else
        ``dof_value (time, individual, dof)``; ``dof_std`` / ``joint_angle_std`` add a
        +-1 SD band, ``limit_active`` red ticks where the solver held a DOF at a limit.
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
        Angles in degrees, slides in the fit's length unit; limits dashed.

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
    t, factor = bin_time(ds["time"], "min")
    t = np.asarray(t.values, dtype=float)
    lines, bands, ticks = {}, {}, {}
    for ind in individuals:
        da = ds[angles.variable].sel(individual=ind).transpose("time", angles.dim)
        lines[ind] = np.asarray(bin_time(da, "mean")[0].values, float) * angles.scale
        if angles.std_variable:
            sd = ds[angles.std_variable].sel(individual=ind).transpose("time", angles.dim)
            bands[ind] = np.asarray(bin_time(sd, "max")[0].values, float) * angles.scale
        if angles.variable == "dof_value" and "limit_active" in ds.data_vars:
            la = ds["limit_active"].sel(individual=ind).transpose("time", "dof").astype(float)
            ticks[ind] = np.asarray(bin_time(la, "max")[0].values) > 0
    ncols = max(1, min(ncols, len(groups)))
    nrows = math.ceil(len(groups) / ncols)
    fig, axes = panel_grid(nrows, ncols, panel=(3.4, 2.0), top=0.7, bottom=1.0, sharex=True)
    for ax, (joint, members) in zip(axes, groups.items(), strict=False):
        for j, a in enumerate(members):
            tint = _TINTS[j % len(_TINTS)]
            for i, ind in enumerate(individuals):
                y = lines[ind][:, a]
                ax.plot(t, y, color=tint, lw=1.0, ls=_DASHES[i % len(_DASHES)])
                if ind in bands:
                    sd = bands[ind][:, a]
                    ax.fill_between(t, y - sd, y + sd, color=tint, alpha=0.2, lw=0)
                if ind in ticks and ticks[ind][:, a].any():
                    hit = ticks[ind][:, a]
                    ax.plot(t[hit], y[hit], "|", color="#d62728", ms=6, mew=1.2)
            lo, hi = angles.limits.get(angles.names[a], (-np.inf, np.inf))
            for bound in (lo, hi):
                if np.isfinite(bound):
                    ax.axhline(bound, color=tint, lw=0.8, ls="--", alpha=0.7)
        short = [angles.names[a].split("/", 1)[-1] for a in members]
        units = sorted({angles.units[a] for a in members})
        ax.set_title(f"{joint}: {', '.join(short)} ({', '.join(units)})", fontsize=9)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3, lw=0.5)
        legend = [
            Line2D([], [], color=_TINTS[j % len(_TINTS)], lw=1.5, label=s)
            for j, s in enumerate(short)
        ]
        ax.legend(handles=legend, fontsize=7, loc="upper right", ncols=len(legend))
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
    if any(v.any() for v in ticks.values()):
        handles.append(Line2D([], [], ls="", marker="|", color="#d62728", label="held at limit"))
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
    )
    return fig
