"""DOF trajectories over time, one panel per DOF, with the body plan's limits shaded."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from pipeline.bodyplan import BodyPlan
from pipeline.inspect.data.checks import (
    InspectError,
    as_dataset,
    body_plan_of,
    dof_kinds,
    joint_dofs,
    length_unit,
    pick_individuals,
    pick_time,
)
from pipeline.inspect.data.display import bin_time, binned_note, color, time_label

__all__ = ["dof_limits", "plot_dof_trajectories", "select_dofs"]

_LIMIT = {"color": "#d62728", "alpha": 0.13, "lw": 0}
_CONE = {"color": "#ff7f0e", "alpha": 0.13, "lw": 0}


def select_dofs(
    ds: xr.Dataset, dofs: str | Sequence[str] | None, plan: BodyPlan | None = None
) -> list[str]:
    """DOF names from DOF names or joint names (a joint selects all its DOFs).

    Raises
    ------
    InspectError
        A name that is neither a DOF nor a joint with DOFs (the message lists both).
    """
    valid = [str(d) for d in ds["dof"].values]
    if dofs is None:
        return valid
    by_joint = joint_dofs(ds, plan)
    out: list[str] = []
    for name in [dofs] if isinstance(dofs, str) else list(dofs):
        matches = [name] if name in valid else by_joint.get(name, [])
        if not matches:
            raise InspectError(
                f"no DOF or joint named {name!r}; joints with DOFs: {', '.join(by_joint)}; "
                f"DOFs: {', '.join(valid)}"
            )
        out += [m for m in matches if m not in out]
    return out


def dof_limits(plan: BodyPlan | None, dofs: Sequence[str]) -> dict[str, dict[str, tuple]]:
    """Box limits and ball-cone half-angles of the named DOFs (rad or length units).

    Returns
    -------
    dict
        DOF name -> ``{"box": (lower, upper)}`` for bounded DOFs (either may be
        infinite) or ``{"cone": (-half, half)}`` for a ball joint's swing component;
        unbounded DOFs and plans without the DOF are absent.
    """
    if plan is None:
        return {}
    out: dict[str, dict[str, tuple]] = {}
    names = list(plan.dof_names)
    index = 0
    for joint in plan.joints:
        swing = 0
        for dof in joint.dofs:
            name = names[index]
            if dof.type == "swing" and joint.kind is not None and joint.kind.swing_limit:
                half = float(joint.kind.swing_limit[min(swing, 1)])
                out[name] = {"cone": (-half, half)}
                swing += 1
            elif np.isfinite(plan.lower[index]) or np.isfinite(plan.upper[index]):
                out[name] = {"box": (float(plan.lower[index]), float(plan.upper[index]))}
            index += 1
    return {k: v for k, v in out.items() if k in set(dofs)}


def _shade(ax, interval: tuple[float, float], style: dict, lo: float, hi: float) -> None:
    lower, upper = interval
    if np.isfinite(lower):
        ax.axhspan(lo, lower, **style)
        ax.axhline(lower, color=style["color"], lw=0.8, ls="--")
    if np.isfinite(upper):
        ax.axhspan(upper, hi, **style)
        ax.axhline(upper, color=style["color"], lw=0.8, ls="--")


def plot_dof_trajectories(
    fit: xr.Dataset | xr.DataArray,
    *,
    individual: str | Sequence[str] | None = None,
    dofs: str | Sequence[str] | None = None,
    time: slice | tuple[float, float] | None = None,
    plan: BodyPlan | None = None,
    degrees: bool = True,
    ncols: int = 4,
) -> Figure:
    """Plot DOF values over time, one panel per DOF, limits shaded.

    Parameters
    ----------
    fit : xarray.Dataset or xarray.DataArray
        Needs ``dof_value (time, individual, dof)``; ``limit_active`` (same dims), when
        present, marks the frames where the solver clamped a DOF to a limit.
    individual : str or sequence of str, optional
        Individuals to draw (default all, one colour each).
    dofs : str or sequence of str, optional
        DOF names (``"knee_l/0"``) or joint names (all DOFs of the joint); default all.
    time : slice or (start, stop), optional
        Time range in time-coordinate units (inclusive).
    plan : BodyPlan, optional
        Body plan for the limits; default the one stored in the fit's attrs.
    degrees : bool
        Show angles (hinge and swing DOFs) in degrees instead of radians.
    ncols : int
        Panels per row.

    Returns
    -------
    matplotlib.figure.Figure
        Regions beyond a box limit shaded red, beyond a ball's swing cone half-angle
        orange; frames at a limit marked with red ticks.
    """
    ds = as_dataset(fit, {"dof_value": ("time", "individual", "dof")}, "plot_dof_trajectories")
    ds = pick_time(ds, time)
    individuals = pick_individuals(ds, individual)
    plan = body_plan_of(ds, plan)
    names = select_dofs(ds, dofs, plan)
    kinds = dict(zip(map(str, ds["dof"].values), dof_kinds(ds, plan), strict=True))
    limits = dof_limits(plan, names)
    values, factor = bin_time(ds["dof_value"].sel(dof=names, individual=individuals), "mean")
    values = values.transpose("time", "individual", "dof").values
    active = None
    if "limit_active" in ds:
        sel = ds["limit_active"].sel(dof=names, individual=individuals).astype(float)
        active = bin_time(sel, "max")[0].transpose("time", "individual", "dof").values > 0
    t = bin_time(ds["time"], "min")[0].values
    ncols = max(1, min(ncols, len(names)))
    nrows = math.ceil(len(names) / ncols)
    # a fixed grid (inches) instead of constrained layout: many panels lay out 2x faster
    width, height = max(3.2 * ncols, 7.0), 1.6 * nrows + 1.3
    fig = Figure(figsize=(width, height), dpi=100)
    grid = fig.add_gridspec(
        nrows,
        ncols,
        left=0.55 / width,
        right=1 - 0.15 / width,
        top=1 - 0.8 / height,
        bottom=0.85 / height,
        hspace=0.62 / 1.05,
        wspace=0.5 / 2.6,
    )
    axes = np.atleast_1d(grid.subplots(sharex=True, squeeze=False)).ravel()
    for k, name in enumerate(names):
        ax = axes[k]
        angular = kinds[name] in ("hinge", "swing")
        scale = 180 / np.pi if (angular and degrees) else 1.0
        unit = ("deg" if degrees else "rad") if angular else length_unit(ds)
        unit = unit if kinds[name] != "unknown" else "rad or length"
        y = values[:, :, k] * scale
        for i in range(len(individuals)):
            ax.plot(t, y[:, i], color=color(i), lw=1.0)
            if active is not None and active[:, i, k].any():
                hit = active[:, i, k]
                ax.plot(t[hit], y[hit, i], "|", color="#d62728", ms=6, mew=1.2)
        finite = y[np.isfinite(y)]
        lo, hi = (finite.min(), finite.max()) if finite.size else (-1.0, 1.0)
        for interval in limits.get(name, {}).values():
            bounds = [b * scale for b in interval if np.isfinite(b)]
            lo, hi = min([lo, *bounds]), max([hi, *bounds])
        pad = 0.1 * (hi - lo) if hi > lo else 1.0
        lo, hi = lo - pad, hi + pad
        for key, interval in limits.get(name, {}).items():
            _shade(
                ax,
                (interval[0] * scale, interval[1] * scale),
                _CONE if key == "cone" else _LIMIT,
                lo,
                hi,
            )
        ax.set_ylim(lo, hi)
        ax.set_title(f"{name} ({unit})", fontsize=9)
        ax.tick_params(labelsize=8)
        ax.grid(alpha=0.3, lw=0.5)
    for ax in axes[len(names) :]:
        ax.set_visible(False)
    for ax in axes[max(len(names) - ncols, 0) : len(names)]:
        ax.set_xlabel(time_label(ds), fontsize=9)
        ax.xaxis.set_tick_params(labelbottom=True)
    handles = [Line2D([], [], color=color(i), lw=1.5, label=n) for i, n in enumerate(individuals)]
    if any("box" in v for v in limits.values()):
        handles.append(Patch(color=_LIMIT["color"], alpha=0.3, label="beyond limit"))
    if any("cone" in v for v in limits.values()):
        handles.append(Patch(color=_CONE["color"], alpha=0.3, label="beyond swing cone"))
    if active is not None and active.any():
        handles.append(Line2D([], [], ls="", marker="|", color="#d62728", label="at limit"))
    fig.legend(
        handles=handles,
        loc="lower center",
        bbox_to_anchor=(0.5, 0.1 / height),
        ncols=min(len(handles), int(width // 1.7)),
        fontsize=9,
    )
    session = ds.attrs.get("session")
    fig.suptitle(
        f"DOF trajectories{f' — {session}' if session else ''}{binned_note(factor)}",
        fontsize=12,
        y=1 - 0.12 / height,
        va="top",
    )
    return fig
