"""The viewer's traces: 3D skeleton and markers per frame, angle and error panels.

Traces are plain dicts in plotly's figure schema; 3D coordinates are float32 numpy arrays
(plotly writes them as base64 typed arrays, a quarter of the size of JSON numbers). The
angle panel's gaps (no keypoint evidence, :func:`~pipeline.inspect.angles.evidence_gaps`)
are layout shapes, one set per joint (:func:`gap_shapes`).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from pipeline.bodyplan import BodyPlan
from pipeline.inspect.angles import AngleSet, evidence_gaps
from pipeline.inspect.bands import BAND_FLOOR_DEG, band_axis, clip_band
from pipeline.inspect.plots.angles import CLIP_LABEL, GAP_LABEL, gap_spans, panel_gaps
from pipeline.inspect.plots.common import MAX_TIME_POINTS, bin_time, color
from pipeline.inspect.viewer_data import SessionFrames, typed

__all__ = ["angle_traces", "error_traces", "frame_traces", "gap_shapes"]

_DASHES = ("solid", "dash", "dot", "dashdot", "longdash")
_MARKERS = {
    "missing": {"symbol": "circle-open", "size": 7, "color": "#888888", "line": {"width": 2}},
    "large": {"symbol": "circle-open", "size": 11, "color": "#d62728", "line": {"width": 3}},
    "limit": {"symbol": "diamond", "size": 5, "color": "#ff7f0e"},
}


def _xyz(points: np.ndarray) -> dict[str, dict]:
    points = np.asarray(points, dtype=np.float32).reshape(-1, 3)
    return {"x": typed(points[:, 0]), "y": typed(points[:, 1]), "z": typed(points[:, 2])}


def _skeleton(fitted: np.ndarray, paths: np.ndarray) -> np.ndarray:
    """``(P, 3)`` polyline points of one frame (NaN between polylines)."""
    if not len(paths):
        return fitted
    out = fitted[np.maximum(paths, 0)].copy()
    out[paths < 0] = np.nan
    return out


def frame_traces(
    frames: SessionFrames,
    paths: np.ndarray,
    names: list[str],
    individual: str,
    tint: str,
    unit: str,
) -> tuple[list[dict], list[list[dict]]]:
    """The 3D traces of one individual: their first-frame form, and each frame's update.

    Returns
    -------
    base : list of dict
        Skeleton, observed (when given), missing, large-residual and at-limit traces.
    per_frame : list of list of dict
        For each kept frame, the data of the same traces at that frame.
    """
    labels = [names[k] if k >= 0 else "" for k in paths] if len(paths) else list(names)
    hover = "%{text}<br>%{x:.3g}, %{y:.3g}, %{z:.3g} " + unit + "<extra>" + individual + "</extra>"
    base = [
        {
            "type": "scatter3d",
            "mode": "lines+markers" if len(paths) else "markers",
            "name": f"{individual} fitted",
            "legendgroup": individual,
            "line": {"color": tint, "width": 5},
            "marker": {"color": tint, "size": 3},
            "text": labels,
            "hovertemplate": hover,
            "meta": {"kinefit": "skeleton", "individual": individual, "joints": labels},
        }
    ]
    kinds = ["observed"] if frames.observed is not None else []
    kinds += ["missing", "large", "limit"]
    titles = {
        "observed": f"{individual} observed",
        "missing": f"{individual} missing keypoint",
        "large": f"{individual} residual > {frames.threshold:.3g} {unit}",
        "limit": f"{individual} joint at a limit",
    }
    for kind in kinds:
        marker = (
            {"symbol": "x", "size": 3, "color": "#111111"}
            if kind == "observed"
            else dict(_MARKERS[kind])
        )
        base.append(
            {
                "type": "scatter3d",
                "mode": "markers",
                "name": titles[kind],
                "legendgroup": individual,
                "marker": marker,
                "hovertemplate": hover,
                "meta": {"kinefit": kind, "individual": individual},
            }
        )
    per_frame = []
    for f in range(len(frames.frames)):
        fitted = frames.fitted[f]
        data = [{"type": "scatter3d", **_xyz(_skeleton(fitted, paths))}]
        masks = {"missing": frames.missing[f], "large": frames.large[f]}
        masks["limit"] = frames.at_limit[f]
        for kind in kinds:
            if kind == "observed":  # its text (the keypoint names) is the base trace's
                data.append({"type": "scatter3d", **_xyz(frames.observed[f])})
                continue
            where = np.flatnonzero(masks[kind])
            points = fitted[where]
            if kind == "large" and frames.observed is not None:
                seen = frames.observed[f][where]
                points = np.where(np.isfinite(seen), seen, points)
            data.append({"type": "scatter3d", "text": [names[k] for k in where], **_xyz(points)})
        per_frame.append(data)
    for trace, data in zip(base, per_frame[0] if per_frame else [], strict=False):
        trace.update({k: v for k, v in data.items() if k != "type"})
        if trace["meta"]["kinefit"] == "observed":
            trace["text"] = list(names)
    return base, per_frame


def error_traces(
    ds: xr.Dataset, individuals: list[str], kept: np.ndarray, t: np.ndarray, unit: str
) -> tuple[dict, dict, list[dict]]:
    """The two time cursors (angle and error panels) and the RMS error lines.

    The cursors sit on hidden overlay axes ranged 0-1, so they span their panel whatever
    its data range; frames move their ``x``.
    """
    t0 = float(t[kept[0]]) if len(kept) else 0.0
    cursor = {
        "type": "scatter",
        "mode": "lines",
        "x": [t0, t0],
        "y": [0, 1],
        "line": {"color": "#222222", "width": 1.5},
        "hoverinfo": "skip",
        "showlegend": False,
        "name": "time cursor",
    }
    cursor_a = {**cursor, "xaxis": "x", "yaxis": "y3", "meta": {"kinefit": "cursor"}}
    cursor_e = {**cursor, "xaxis": "x2", "yaxis": "y4", "meta": {"kinefit": "cursor"}}
    lines = []
    if "rms_error" in ds.data_vars:
        rms, _ = bin_time(ds["rms_error"].sel(individual=individuals), "max")
        bt = np.asarray(bin_time(ds["time"], "min")[0].values, dtype=float)
        values = np.asarray(rms.transpose("time", "individual").values, dtype=np.float32)
        for i, ind in enumerate(individuals):
            lines.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "x": typed(bt),
                    "y": typed(values[:, i]),
                    "xaxis": "x2",
                    "yaxis": "y2",
                    "name": f"{ind} RMS error",
                    "legendgroup": ind,
                    "line": {"color": color(i), "width": 1},
                    "hovertemplate": "%{y:.3g} " + unit + "<extra>" + ind + "</extra>",
                    "meta": {"kinefit": "rms", "individual": ind},
                }
            )
    return cursor_a, cursor_e, lines


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
        :func:`~pipeline.inspect.angles.evidence_gaps`).
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
        below the traces) over its merged gap frames, every individual's; the first one
        carries the legend entry ``GAP_LABEL``. The joint menu swaps them in.
    never : dict
        Angle index -> the individuals without evidence for it in any frame (not shaded;
        :func:`~pipeline.inspect.plots.angles.panel_gaps`).
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

    ``never`` (angle index -> individuals, :func:`gap_shapes`) marks the angles without
    keypoint evidence in any frame: their line's name ends ``(never observed)``.

    Returns
    -------
    traces : list of dict
        Only the ``shown`` joint's traces are visible; the joint menu switches. A band
        reaching past its joint's y-range is clipped to it, with triangles on the range's
        edge where it was (``meta`` ``{"kinefit": "angle_std_clipped"}``, in the legend
        as :data:`~pipeline.inspect.plots.angles.CLIP_LABEL` with the largest SD).
    joints : list of str
        The joint of each trace, in order.
    ranges : dict
        Joint -> its y-range ``[low, high]``, set by its trajectories
        (:func:`~pipeline.inspect.bands.band_axis`); None without a finite value.
    """
    t = np.asarray(bin_time(ds["time"], "min")[0].values, dtype=float)
    span = [float(t[0]), float(t[-1])] if len(t) else [0.0, 1.0]
    values, stds, active = {}, {}, {}
    for ind in individuals:
        da = ds[angles.variable].sel(individual=ind).transpose("time", angles.dim)
        values[ind] = np.asarray(bin_time(da, "mean", MAX_TIME_POINTS)[0].values) * angles.scale
        if angles.std_variable:
            sd = ds[angles.std_variable].sel(individual=ind).transpose("time", angles.dim)
            stds[ind] = np.asarray(bin_time(sd, "max")[0].values) * angles.scale
        if angles.variable == "dof_value" and "limit_active" in ds.data_vars:
            la = ds["limit_active"].sel(individual=ind).transpose("time", "dof").astype(float)
            active[ind] = np.asarray(bin_time(la, "max")[0].values) > 0
    traces, joints, ranges = [], [], {}
    for group, members in groups.items():
        pairs = [(a, ind) for a in members for ind in individuals]
        axis = band_axis(
            [values[ind][:, a] for a, ind in pairs],
            [stds[ind][:, a] if ind in stds else None for a, ind in pairs],
            [b for a in members for b in angles.limits.get(angles.names[a], ())],
            floor=BAND_FLOOR_DEG if all(angles.units[a] == "deg" for a in members) else 0.0,
        )
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
