"""Observed versus fitted keypoints on the skeleton at one frame.

A 3D fit (3D tracks, or 2D tracks through calibrated cameras) is drawn in 3D and in three
orthographic projections; a single-view 2D fit on its image plane (x right, y down), with
the coordinates one view cannot determine named in the title.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import numpy as np
import xarray as xr
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from pipeline.bodyplan import BodyPlan
from pipeline.inspect.data.checks import (
    InspectError,
    as_dataset,
    body_plan_of,
    frame_index,
    length_unit,
    pick_individuals,
    time_unit,
)
from pipeline.inspect.data.display import color, view_axes
from pipeline.inspect.data.observation import on_image_plane, unobservable_note
from pipeline.inspect.data.playback import skeleton_edges
from pipeline.inspect.plots.figures import new_figure
from pipeline.store.attrs import residual_unit

__all__ = ["plot_skeleton_frame"]

_FITTED = {"fitted_position": ("time", "space", "keypoint", "individual")}
_OBSERVED = {"color": "black", "marker": "x", "s": 22, "linewidths": 1.0, "zorder": 4}


def _observed_frame(observed, ds: xr.Dataset, k: int, individuals: list[str]) -> np.ndarray:
    """``(individual, keypoint, 3)`` observed positions at frame ``k`` (NaN where missing)."""
    obs = observed["position"] if isinstance(observed, xr.Dataset) else observed
    if not isinstance(obs, xr.DataArray):
        raise TypeError("observed must be an xarray DataArray or tracks Dataset")
    lacking = [d for d in ("time", "space", "keypoint", "individual") if d not in obs.dims]
    if lacking:
        raise InspectError(
            f"plot_skeleton_frame: observed positions lack dim(s) {', '.join(lacking)}; pass "
            "the tracks' position (time, space, keypoint, individual), e.g. from "
            "pipeline.inspect.open_observed(fit)"
        )
    names = ds["keypoint"].values
    if not set(map(str, obs["keypoint"].values)) & set(map(str, names)):
        raise InspectError(
            "plot_skeleton_frame: no observed keypoint is named like a joint of the fit; map "
            "the tracks first with pipeline.inspect.observed_positions(fit, tracks)"
        )
    t = ds["time"].values[k]
    obs = obs.sel(time=t, method="nearest").reindex(keypoint=names, individual=individuals)
    return np.asarray(obs.transpose("individual", "keypoint", "space").values, dtype=float)


def _draw(ax, pts_fit, pts_obs, edges, dims, is3d: bool) -> None:
    for i, (fitted, seen) in enumerate(zip(pts_fit, pts_obs, strict=True)):
        p = fitted[:, dims]
        lines = [(p[a], p[b]) for a, b in edges]
        if is3d:
            for seg in lines:
                ax.plot(*np.transpose(seg), color=color(i), lw=2.0)
            ax.scatter(*p.T, color=color(i), s=10, depthshade=False)
        else:
            ax.add_collection(LineCollection(lines, colors=color(i), linewidths=2.0))
            ax.scatter(*p.T, color=color(i), s=10, zorder=3)
        if seen is None:
            continue
        q = seen[:, dims]
        ok = np.isfinite(q).all(axis=1) & np.isfinite(p).all(axis=1)
        for a, b in zip(p[ok], q[ok], strict=True):
            ax.plot(*np.transpose([a, b]), color="0.45", lw=0.8, ls=":")
        ax.scatter(*q[ok].T, **_OBSERVED)


def plot_skeleton_frame(
    fit: xr.Dataset | xr.DataArray,
    observed: xr.DataArray | xr.Dataset | None = None,
    *,
    time: float | None = None,
    frame: int | None = None,
    individual: str | Sequence[str] | None = None,
    plan: BodyPlan | None = None,
) -> Figure:
    """Draw the fitted skeleton and the observed keypoints at one frame.

    Parameters
    ----------
    fit : xarray.Dataset or xarray.DataArray
        Needs ``fitted_position (time, space, keypoint, individual)``; ``rms_error`` is
        used for the default frame and the legend when present.
    observed : xarray.DataArray or xarray.Dataset, optional
        Observed ``position (time, space, keypoint, individual)`` with the fit's keypoint
        (joint) names: :func:`pipeline.inspect.open_observed` or
        :func:`pipeline.inspect.observed_positions`. Omitted: fitted skeleton only.
    time : float, optional
        Time-coordinate value of the frame (nearest frame is drawn).
    frame : int, optional
        Frame index instead of ``time``. With neither, the frame with the worst RMS
        error (or the first frame without ``rms_error``).
    individual : str or sequence of str, optional
        Default all individuals.
    plan : BodyPlan, optional
        For the skeleton's edges (joint to parent); default the fit's stored plan.

    Returns
    -------
    matplotlib.figure.Figure
        A 3D view and the front, side and top orthographic projections (the fit's
        ``up_axis`` attr is up; default z); equal scale on every axis.
    """
    ds = as_dataset(fit, _FITTED, "plot_skeleton_frame")
    individuals = pick_individuals(ds, individual)
    if time is None and frame is None and "rms_error" in ds:
        rms = np.asarray(ds["rms_error"].sel(individual=individuals).values, dtype=float)
        rms = np.where(np.isfinite(rms), rms, -np.inf).max(axis=1)
        frame = int(np.argmax(rms))
    k = frame_index(ds, time, frame)
    names = [str(n) for n in ds["keypoint"].values]
    one = ds["fitted_position"].isel(time=k).sel(individual=individuals)
    pts_fit = np.asarray(one.transpose("individual", "keypoint", "space").values, dtype=float)
    pts_obs = [None] * len(individuals)
    if observed is not None:
        pts_obs = list(_observed_frame(observed, ds, k, individuals))
    plan = body_plan_of(ds, plan)
    edges = skeleton_edges(plan, names)
    a, b, u, sign = view_axes(ds.attrs.get("up_axis"))
    space = [str(s) for s in ds["space"].values]
    unit = length_unit(ds)
    if on_image_plane(ds):
        fig = new_figure(8, 7)
        _image_plane(fig.add_subplot(1, 1, 1), pts_fit, pts_obs, edges, space, unit)
        return _finish(fig, ds, k, individuals, observed is not None, unit)
    fig = new_figure(11, 9.5)
    ax3 = fig.add_subplot(2, 2, 1, projection="3d")
    _draw(ax3, pts_fit, pts_obs, edges, [a, b, u], True)
    every = np.concatenate([pts_fit.reshape(-1, 3)] + [o for o in pts_obs if o is not None])
    every = every[np.isfinite(every).all(axis=1)]
    centre = (every.min(axis=0) + every.max(axis=0)) / 2 if every.size else np.zeros(3)
    radius = max(float(np.ptp(every, axis=0).max()) / 2 if every.size else 1.0, 1e-9) * 1.05
    for set_lim, d in zip((ax3.set_xlim, ax3.set_ylim, ax3.set_zlim), (a, b, u), strict=True):
        set_lim(centre[d] - radius, centre[d] + radius)
    if sign < 0:
        ax3.invert_zaxis()
    ax3.set_box_aspect((1, 1, 1))
    ax3.set_xlabel(f"{space[a]} ({unit})")
    ax3.set_ylabel(f"{space[b]} ({unit})")
    ax3.set_zlabel(f"{space[u]} ({unit})")
    ax3.set_title("3D")
    views = [("front", a, u, 2), ("side", b, u, 3), ("top", a, b, 4)]
    for label, h, v, slot in views:
        ax = fig.add_subplot(2, 2, slot)
        _draw(ax, pts_fit, pts_obs, edges, [h, v], False)
        ax.set_aspect("equal", adjustable="datalim")
        ax.autoscale_view()
        if sign < 0 and v == u:
            ax.invert_yaxis()
        ax.set_xlabel(f"{space[h]} ({unit})")
        ax.set_ylabel(f"{space[v]} ({unit})")
        ax.set_title(f"{label} ({space[h]}–{space[v]})")
        ax.grid(alpha=0.3)
    return _finish(fig, ds, k, individuals, observed is not None, unit)


def _image_plane(ax, pts_fit, pts_obs, edges, space: list[str], unit: str) -> None:
    """The image plane of a single-view 2D fit: x right, y down, equal scale."""
    _draw(ax, pts_fit, pts_obs, edges, [0, 1], False)
    ax.set_aspect("equal", adjustable="datalim")
    ax.autoscale_view()
    ax.invert_yaxis()
    ax.set_xlabel(f"{space[0]} ({unit})")
    ax.set_ylabel(f"{space[1]} ({unit}, down)")
    ax.set_title("image plane (one view)")
    ax.grid(alpha=0.3)


def _finish(
    fig: Figure, ds: xr.Dataset, k: int, individuals: list[str], has_observed: bool, unit: str
) -> Figure:
    """Legend and title: the frame, and what the fit's views could not determine."""
    handles = []
    for i, name in enumerate(individuals):
        rms = ""
        if "rms_error" in ds:
            value = float(ds["rms_error"].isel(time=k).sel(individual=name).values)
            rms = f" (RMS {value:.3g} {residual_unit(ds.attrs)})"
        handles.append(Line2D([], [], color=color(i), lw=2, marker="o", ms=4, label=name + rms))
    if has_observed:
        handles.append(Line2D([], [], color="black", ls="", marker="x", label="observed"))
        handles.append(Line2D([], [], color="0.45", ls=":", label="residual"))
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 4))
    t = float(ds["time"].values[k])
    session = ds.attrs.get("session")
    note = "" if has_observed else " — fitted only (no observed keypoints given)"
    blind = unobservable_note(ds)
    blind = f"\n{textwrap.fill(blind, 90)}" if blind else ""
    fig.suptitle(
        f"Observed vs fitted{f' — {session}' if session else ''}: "
        f"t = {t:.4g} {time_unit(ds)} (frame {k}){note}{blind}",
        fontsize=12 if not blind else 10.5,
    )
    return fig
