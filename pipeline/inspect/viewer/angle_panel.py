"""The viewer's angle panel: its traces, gap shading, y-range and axis title.

The panel shows one joint's angle trajectories at a time (:func:`angle_traces`: lines,
uncertainty bands clipped to the trajectories' y-range, limits, at-limit ticks); the
frames without keypoint evidence are grey layout shapes, one set per joint
(:func:`gap_shapes`); the joint menu
(:func:`~pipeline.inspect.viewer.controls.joint_menu`) switches the visible traces, the
shapes, the axis title (:func:`angle_units`) and the y-range (:func:`angle_axis`).
Traces are plain dicts in plotly's figure schema, arrays base64 typed arrays
(:func:`~pipeline.inspect.viewer.encoding.typed`).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from pipeline.bodyplan import BodyPlan
from pipeline.inspect.data.angle_panels import (
    CLIP_LABEL,
    GAP_LABEL,
    gap_spans,
    panel_data,
    panel_gaps,
)
from pipeline.inspect.data.angle_sets import AngleSet, evidence_gaps
from pipeline.inspect.data.bands import clip_band
from pipeline.inspect.data.display import color
from pipeline.inspect.viewer.encoding import typed

__all__ = ["angle_axis", "angle_traces", "angle_units", "gap_shapes"]

_DASHES = ("solid", "dash", "dot", "dashdot", "longdash")


def gap_shapes(
    ds: xr.Dataset,
    angles: AngleSet,
    groups: dict[str, list[int]],
    individuals: list[str],
    plan: BodyPlan | None = None,
) -> tuple[dict[str, list[dict]], dict[int, list[str]]]:
    """The angle panel's gap shading of every joint, and the angles never observed.

    Parameters
    ----------
    ds : xarray.Dataset
        The fit (``dof_observable``, else missing keypoints; see
        :func:`~pipeline.inspect.data.angle_sets.evidence_gaps`).
    angles : AngleSet
    groups : dict
        Joint -> its angles (indices into ``angles.names``).
    individuals : list of str
    plan : BodyPlan, optional
        Default the fit's stored plan.

    Returns
    -------
    shapes : dict
        Joint -> grey rectangles spanning the panel's height (``yref`` ``"y domain"``,
        below the traces) over its merged gap frames (``x`` in the fit's time units),
        every individual's; the first one
        carries the legend entry ``GAP_LABEL``. The joint menu swaps them in.
    never : dict
        Angle index -> the individuals without evidence for it in any frame (not shaded;
        :func:`~pipeline.inspect.data.angle_panels.panel_gaps`).
    """
    t = np.asarray(ds["time"].values, dtype=float)
    gaps = {ind: evidence_gaps(ds, angles, ind, plan) for ind in individuals}
    shapes, never = {}, {}
    for group, members in groups.items():
        shade, blind = panel_gaps(gaps, members)
        never.update(blind)
        spans = gap_spans(t, shade) if shade is not None else []
        shapes[group] = [
            {
                "type": "rect",
                "xref": "x",
                "yref": "y domain",
                "x0": x0,
                "x1": x1,
                "y0": 0,
                "y1": 1,
                "fillcolor": "#9a9a9a",
                "opacity": 0.3,
                "line": {"width": 0},
                "layer": "below",
                "name": GAP_LABEL,
                "legendgroup": "gap",
                "showlegend": k == 0,
            }
            for k, (x0, x1) in enumerate(spans)
        ]
    return shapes, never


def angle_traces(
    ds: xr.Dataset,
    angles: AngleSet,
    groups: dict[str, list[int]],
    individuals: list[str],
    shown: str | None,
    never: dict[int, list[str]] | None = None,
) -> tuple[list[dict], list[str], dict[str, list[float] | None]]:
    """The angle panel's traces (lines, std bands, limits, at-limit ticks) and their joint.

    Parameters
    ----------
    ds : xarray.Dataset
        The fit: ``angles.variable`` ``(time, individual, <angle dim>)`` (and
        ``angles.std_variable``, ``limit_active (time, individual, dof)`` when present),
        binned to at most :data:`~pipeline.inspect.data.display.MAX_TIME_POINTS` times.
    angles : AngleSet
        What the angles are: variable, names, units (``angles.scale`` converts to them,
        radians to degrees for DOF values), limits.
    groups : dict
        Joint -> its angles (indices into ``angles.names``).
    individuals : list of str
    shown : str or None
        The joint whose traces are visible.
    never : dict, optional
        Angle index -> the individuals without keypoint evidence for it in any frame
        (:func:`gap_shapes`): their line's name ends ``(never observed)``.

    Returns
    -------
    traces : list of dict
        Only the ``shown`` joint's traces are visible; the joint menu switches. A band
        reaching past its joint's y-range is clipped to it, with triangles on the range's
        edge where it was (``meta`` ``{"kinefit": "angle_std_clipped"}``, in the legend
        as :data:`~pipeline.inspect.data.angle_panels.CLIP_LABEL` with the largest SD).
    joints : list of str
        The joint of each trace, in order.
    ranges : dict
        Joint -> its y-range ``[low, high]``, set by its trajectories
        (:func:`~pipeline.inspect.data.bands.band_axis`); None without a finite value.
    """
    panels = panel_data(ds, angles, individuals)
    t, values, stds, active = panels.t, panels.lines, panels.stds, panels.active
    span = [float(t[0]), float(t[-1])] if len(t) else [0.0, 1.0]
    traces, joints, ranges = [], [], {}
    for group, members in groups.items():
        axis = panels.axis(angles, members)
        ranges[group] = None if axis is None else [float(axis[0]), float(axis[1])]
        for j, a in enumerate(members):
            name, tint = angles.names[a], color(j)
            for i, ind in enumerate(individuals):
                y = values[ind][:, a]
                label = name if len(individuals) == 1 else f"{name} ({ind})"
                common = {"xaxis": "x", "yaxis": "y", "visible": group == shown}
                if ind in stds:
                    sd = stds[ind][:, a]
                    if axis is None:
                        lo, hi, below, above = y - sd, y + sd, np.zeros(0), np.zeros(0)
                    else:
                        lo, hi, below, above = clip_band(y, sd, *axis)
                    traces.append(
                        {
                            "type": "scatter",
                            "x": typed(np.r_[t, t[::-1]]),
                            "y": typed(np.r_[hi, lo[::-1]]),
                            "fill": "toself",
                            "fillcolor": tint,
                            "opacity": 0.2,
                            "line": {"width": 0},
                            "hoverinfo": "skip",
                            "showlegend": False,
                            "meta": {"kinefit": "angle_std", "angle": name, "individual": ind},
                            **common,
                        }
                    )
                    joints.append(group)
                    up, down = np.asarray(above, bool), np.asarray(below, bool)
                    if up.any() or down.any():
                        unit = angles.units[a]
                        worst = float(np.nanmax(sd[up | down]))
                        n_up, n_down = int(up.sum()), int(down.sum())
                        traces.append(
                            {
                                "type": "scatter",
                                "mode": "markers",
                                "x": typed(np.r_[t[up], t[down]]),
                                "y": typed(np.r_[np.full(n_up, axis[1]), np.full(n_down, axis[0])]),
                                "customdata": np.r_[sd[up], sd[down]].tolist(),
                                "marker": {
                                    "symbol": ["triangle-up"] * n_up + ["triangle-down"] * n_down,
                                    "color": tint,
                                    "size": 7,
                                },
                                "cliponaxis": False,
                                "name": f"{label}: {CLIP_LABEL} (SD up to {worst:.3g} {unit})",
                                "hovertemplate": "SD %{customdata:.3g} "
                                + unit
                                + " (band clipped)<extra>"
                                + label
                                + "</extra>",
                                "meta": {
                                    "kinefit": "angle_std_clipped",
                                    "angle": name,
                                    "individual": ind,
                                    "max_std": worst,
                                },
                                **common,
                            }
                        )
                        joints.append(group)
                blind = " (never observed)" if ind in (never or {}).get(a, ()) else ""
                traces.append(
                    {
                        "type": "scatter",
                        "mode": "lines",
                        "x": typed(t),
                        "y": typed(y),
                        "name": label + f" ({angles.units[a]})" + blind,
                        "line": {"color": tint, "width": 1.5, "dash": _DASHES[i % len(_DASHES)]},
                        "hovertemplate": "%{y:.3g} " + angles.units[a] + "<extra>" + label,
                        "meta": {"kinefit": "angle", "angle": name, "individual": ind},
                        **common,
                    }
                )
                joints.append(group)
                if ind in active and active[ind][:, a].any():
                    hit = active[ind][:, a]
                    traces.append(
                        {
                            "type": "scatter",
                            "mode": "markers",
                            "x": typed(t[hit]),
                            "y": typed(y[hit]),
                            "marker": {"symbol": "line-ns-open", "color": "#d62728", "size": 8},
                            "name": "held at a limit",
                            "showlegend": False,
                            "hovertemplate": "held at a limit<extra>" + label + "</extra>",
                            "meta": {"kinefit": "angle_limit", "angle": name, "individual": ind},
                            **common,
                        }
                    )
                    joints.append(group)
            lo, hi = angles.limits.get(name, (-np.inf, np.inf))
            xs, ys = [], []
            for bound in (lo, hi):
                if np.isfinite(bound):
                    xs += [*span, None]
                    ys += [bound, bound, None]
            if xs:
                traces.append(
                    {
                        "type": "scatter",
                        "mode": "lines",
                        "x": xs,
                        "y": ys,
                        "line": {"color": tint, "width": 1, "dash": "dash"},
                        "hoverinfo": "skip",
                        "showlegend": False,
                        "xaxis": "x",
                        "yaxis": "y",
                        "visible": group == shown,
                        "meta": {"kinefit": "angle_bounds", "angle": name},
                    }
                )
                joints.append(group)
    return traces, joints, ranges


def angle_axis(extent: list[float] | None) -> dict:
    """The angle axis's range settings: the joint's trajectories' range, else autorange.

    Parameters
    ----------
    extent : list of float or None
        ``[low, high]`` in the angles' units (deg or the DOF's), as :func:`angle_traces`
        returns per joint; None when the joint has no finite value.

    Returns
    -------
    dict
        ``{"range": extent, "autorange": False}``, or ``{"autorange": True}``.
    """
    if extent is None:
        return {"autorange": True}
    return {"range": extent, "autorange": False}


def angle_units(angles: AngleSet, groups: dict[str, list[int]], shown: str | None) -> str:
    """The angle axis's title: the units of the ``shown`` joint's angles (``"deg / m"``).

    Parameters
    ----------
    angles : AngleSet
    groups : dict
        Joint -> its angles (indices into ``angles.names``).
    shown : str or None
        The joint shown; None (no joint with angles) gives an empty title.

    Returns
    -------
    str
    """
    if shown is None:
        return ""
    return " / ".join(sorted({angles.units[i] for i in groups[shown]}))
