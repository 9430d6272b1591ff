"""The viewer's per-frame traces: the 3D skeleton and markers, the time cursors, RMS error.

Traces are plain dicts in plotly's figure schema; 3D coordinates are float32 numpy arrays
(plotly writes them as base64 typed arrays, a quarter of the size of JSON numbers). The
angle panel's traces and gap shading are in :mod:`pipeline.inspect.viewer.angle_panel`.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from pipeline.inspect.data.display import bin_time, color
from pipeline.inspect.data.playback import SessionFrames
from pipeline.inspect.viewer.encoding import typed

__all__ = ["error_traces", "frame_traces"]

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
    error_unit: str | None = None,
) -> tuple[list[dict], list[list[dict]]]:
    """The 3D traces of one individual: their first-frame form, and each frame's update.

    ``unit`` is the positions' (hover text), ``error_unit`` the residuals' (the
    large-residual legend; default ``unit``).

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
        "large": f"{individual} residual > {frames.threshold:.3g} {error_unit or unit}",
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
