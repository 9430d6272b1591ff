"""The interactive viewer: a session's fit played over time in a plotly figure.

Left, a rotatable 3D scene: the fitted skeleton of each individual (coloured polylines
through the joints), the observed keypoints (black crosses), keypoints missing at that
frame (grey open circles), keypoints whose residual is large (red open circles) and joints
with a DOF held at a limit (orange diamonds). Right, the joint's angle trajectories (a menu
picks the joint; uncertainty bands when the fit has ``dof_std``, the y-range set by the
trajectories and a band reaching past it clipped, triangles on its edge; limits dashed; grey
spans over the gaps, frames without keypoint evidence) and the RMS error, each with a time
cursor that follows the 3D frame. Play/pause at three speeds and a frame slider drive
both. Long sessions are decimated (:func:`viewer_frames`); the rule is written under the
figure.

:func:`viewer_spec` builds the figure as plotly JSON (the report embeds it),
:func:`viewer_figure` as a plotly Figure; :func:`view` is the notebook entry point.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
import xarray as xr

from pipeline.bodyplan import BodyPlan
from pipeline.inspect.data.angle_sets import angle_set, with_named_angles
from pipeline.inspect.data.checks import (
    InspectError,
    as_dataset,
    body_plan_of,
    length_unit,
    pick_individuals,
    time_unit,
)
from pipeline.inspect.data.display import COLORS, color
from pipeline.inspect.data.fit_archive import open_observed
from pipeline.inspect.data.observation import on_image_plane, unobservable_note
from pipeline.inspect.data.playback import (
    MAX_VIEWER_FRAMES,
    SessionFrames,
    decimation_note,
    skeleton_paths,
    viewer_frames,
)
from pipeline.inspect.viewer.angle_panel import angle_axis, angle_traces, angle_units, gap_shapes
from pipeline.inspect.viewer.controls import frame_slider, joint_menu, play_buttons
from pipeline.inspect.viewer.traces import error_traces, frame_traces
from pipeline.store.attrs import residual_unit

__all__ = ["SPEEDS", "view", "viewer_figure", "viewer_spec"]

_NEEDS = {"fitted_position": ("time", "space", "keypoint", "individual")}
#: Playback speeds offered (x real time); each frame is shown for step / fps / speed s.
SPEEDS: tuple[float, ...] = (0.25, 1.0, 4.0)
#: Shortest time a frame is shown (ms): browsers redraw a 3D scene at about 30-50 Hz.
MIN_FRAME_MS = 20


def _scene_ranges(frames: list[SessionFrames]) -> dict[str, list[float]]:
    """Equal-length axis ranges holding every fitted joint of the kept frames."""
    points = np.concatenate([f.fitted.reshape(-1, 3) for f in frames])
    points = points[np.isfinite(points).all(axis=1)]
    if not len(points):
        return {a: [-1.0, 1.0] for a in "xyz"}
    lo, hi = points.min(axis=0), points.max(axis=0)
    centre, half = (lo + hi) / 2, max(float((hi - lo).max()) / 2 * 1.15, 1e-9)
    return {a: [float(centre[i] - half), float(centre[i] + half)] for i, a in enumerate("xyz")}


def _camera_up(up_axis: str | None) -> dict[str, float]:
    up = str(up_axis or "z").strip().lower()
    sign = -1.0 if up.startswith("-") else 1.0
    axis = up.lstrip("+-") if up.lstrip("+-") in ("x", "y", "z") else "z"
    return {a: (sign if a == axis else 0.0) for a in "xyz"}


def _camera(ds: xr.Dataset) -> dict:
    """The scene's camera: a single-view 2D fit seen as its image (x right, y down)."""
    if on_image_plane(ds):
        return {
            "up": {"x": 0.0, "y": -1.0, "z": 0.0},
            "eye": {"x": 0.0, "y": 0.0, "z": -1.6},
            "projection": {"type": "orthographic"},
        }
    return {"up": _camera_up(ds.attrs.get("up_axis")), "eye": _camera_eye(ds)}


def _camera_eye(ds: xr.Dataset) -> dict[str, float]:
    """A viewpoint a little above the ground, at 3/4 of plotly's default distance."""
    up = _camera_up(ds.attrs.get("up_axis"))
    axis = next(a for a, v in up.items() if v)
    return {a: (0.6 * up[a] if a == axis else 1.1) for a in "xyz"}


def viewer_spec(
    fit: xr.Dataset,
    observed: xr.DataArray | None = None,
    *,
    individual: str | Sequence[str] | None = None,
    max_frames: int = MAX_VIEWER_FRAMES,
    keep_frames: Sequence[int] = (),
    plan: BodyPlan | None = None,
    joint: str | None = None,
    residual_threshold: float | None = None,
    height: int = 720,
) -> dict:
    """The interactive viewer of one session (see the module docstring).

    Parameters
    ----------
    fit : xarray.Dataset
        Needs ``fitted_position (time, space, keypoint, individual)``; ``residual``,
        ``rms_error``, ``limit_active``, ``dof_value`` or ``joint_angle``, ``dof_std`` and
        ``dof_observable`` (gaps) are shown when present.
    observed : xarray.DataArray, optional
        Observed ``position (time, space, keypoint, individual)`` with the fit's keypoint
        names (:func:`pipeline.inspect.open_observed`); without it no crosses are drawn.
    individual : str or sequence of str, optional
        Individuals drawn (default all, one colour each).
    max_frames : int
        Regular frames kept: every ``ceil(frames / max_frames)``-th frame.
    keep_frames : sequence of int
        Frames always kept (the report passes its worst frames, so links land on them).
    plan : BodyPlan, optional
        Skeleton edges, DOF kinds and limits; default the fit's stored plan.
    joint : str, optional
        The joint whose angles are shown first (default the first with DOFs).
    residual_threshold : float, optional
        Residuals above it (the fit's ``residual_unit``) are flagged; default
        :func:`~pipeline.inspect.data.playback.large_residual_threshold`.
    height : int
        Figure height (px).

    Returns
    -------
    dict
        The figure in plotly's JSON schema (``data``, ``layout``, ``frames``), written
        without plotly.py's validation (seconds for a few hundred frames); arrays are
        base64 typed arrays (:func:`~pipeline.inspect.viewer.encoding.decode`). Frames are named
        by frame index (``str(k)``) and update every trace, in trace order (the angle and
        error lines with no change, ``{}``); trace ``meta`` says what each trace is
        (``{"kinefit": "skeleton", "individual": ..., "joints": [...]}`` and so on).

    Raises
    ------
    InspectError
        ``fitted_position`` is missing, or an unknown individual or joint.
    """
    ds = as_dataset(fit, _NEEDS, "viewer")
    individuals = pick_individuals(ds, individual)
    plan = body_plan_of(ds, plan)
    names = [str(k) for k in ds["keypoint"].values]
    paths = skeleton_paths(plan, names)
    kept, step = viewer_frames(ds.sizes["time"], max_frames, keep_frames)
    per = [
        SessionFrames.load(ds, ind, kept, observed, plan, residual_threshold) for ind in individuals
    ]
    unit, t_unit = length_unit(ds), time_unit(ds)
    error_unit = residual_unit(ds.attrs)  # px for 2D fits: not the positions' unit
    traces, frame_data = [], [[] for _ in kept]
    for i, (ind, frames) in enumerate(zip(individuals, per, strict=True)):
        base, per_frame = frame_traces(frames, paths, names, ind, color(i), unit, error_unit)
        traces += base
        for f, data in enumerate(per_frame):
            frame_data[f] += data
    ds = with_named_angles(ds, plan)
    angles = angle_set(ds, plan)
    groups = {g: m for g, m in angles.groups.items() if m}
    shown = joint if joint is not None else next(iter(groups), None)
    if shown is not None and shown not in groups:
        has_dofs = plan is not None and any(j.name == shown and j.dofs for j in plan.joints)
        if not has_dofs or not groups:
            raise InspectError(f"no joint {shown!r} with angles; joints: {', '.join(groups)}")
        # a joint whose DOFs are slides only has no angle panel: show the first one instead
        warnings.warn(
            f"viewer: joint {shown!r} has no angles (its DOFs are slides); showing "
            f"{next(iter(groups))!r}; joints with angles: {', '.join(groups)}",
            stacklevel=2,
        )
        shown = next(iter(groups))
    t = np.asarray(ds["time"].values, dtype=float)
    cursor_a, cursor_e, err = error_traces(ds, individuals, kept, t, error_unit)
    fixed = traces + [cursor_a, cursor_e, *err]
    n_dynamic = len(traces)
    shapes, never = gap_shapes(ds, angles, groups, individuals, plan)
    atraces, joints, ranges = angle_traces(ds, angles, groups, individuals, shown, never)
    # A frame updates every trace, in trace order (no "traces" list), the still 2D ones
    # with no change ({}): during a transition (write_html's auto-play runs plotly.js's
    # default 500 ms one) plotly.js redraws only the traces a frame names and drops the
    # rest from their subplots (plotly.js issues 5231, 4596): the angle and error panels
    # kept their time cursors alone.
    n_traces = len(fixed) + len(atraces)
    still = [{}] * (n_traces - n_dynamic - 2)
    for f, k in enumerate(kept):
        tk = float(t[k])
        frame_data[f] += [{"type": "scatter", "x": [tk, tk]}] * 2 + still
    frames = [{"name": str(int(k)), "data": data} for k, data in zip(kept, frame_data, strict=True)]
    fps = float(ds.attrs.get("fps") or 0) or None
    frame_s = step / fps if fps else 0.04
    durations = {s: max(MIN_FRAME_MS, round(1000 * frame_s / s)) for s in SPEEDS}
    session = ds.attrs.get("session") or ""
    note = decimation_note(ds.sizes["time"], step, len(kept), fps)
    blind = unobservable_note(ds)
    layout = dict(
        height=height,
        margin={"l": 10, "r": 10, "t": 110, "b": 40},
        template={"data": {}, "layout": {}},
        colorway=list(COLORS),
        title={
            "text": f"{session + ': ' if session else ''}fitted skeleton and observed keypoints"
            + (" on the image plane" if on_image_plane(ds) else ""),
            "subtitle": {
                "text": "<br>".join(part for part in (note, blind) if part),
                "font": {"size": 11, "color": "#555"},
            },
            "x": 0.01,
            "y": 0.98,
            "yanchor": "top",
        },
        legend={
            "orientation": "h",
            "x": 0.0,
            "y": -0.2,
            "yanchor": "top",
            "font": {"size": 11},
        },
        uirevision="viewer",
        scene={
            "domain": {"x": [0.0, 0.52], "y": [0.08, 1.0]},
            "aspectmode": "cube",
            "camera": _camera(ds),
            **{
                f"{a}axis": {
                    "range": r,
                    "title": {"text": f"{a} ({unit})"},
                    "autorange": False,
                    **({"visible": False} if a == "z" and on_image_plane(ds) else {}),
                }
                for a, r in _scene_ranges(per).items()
            },
        },
        xaxis={"domain": [0.6, 1.0], "anchor": "y", "matches": "x2", "showticklabels": False},
        yaxis={
            "domain": [0.45, 1.0],
            "title": {"text": angle_units(angles, groups, shown)},
            **angle_axis(ranges.get(shown)),
        },
        xaxis2={"domain": [0.6, 1.0], "anchor": "y2", "title": {"text": f"time ({t_unit})"}},
        yaxis2={"domain": [0.0, 0.35], "title": {"text": f"RMS error ({error_unit})"}},
        yaxis3={"overlaying": "y", "range": [0, 1], "visible": False, "fixedrange": True},
        yaxis4={"overlaying": "y2", "range": [0, 1], "visible": False, "fixedrange": True},
        sliders=[frame_slider(kept, t, t_unit)],
        shapes=shapes.get(shown, []) if shown is not None else [],
        updatemenus=[play_buttons(durations)]
        + (
            [joint_menu(angles, groups, len(fixed), shown, joints, shapes, ranges)]
            if groups
            else []
        ),
        meta={"kinefit_viewer": {"frames": kept.tolist(), "step": step, "note": note}},
    )
    return {"data": fixed + atraces, "layout": layout, "frames": frames}


def viewer_figure(fit: xr.Dataset, observed: xr.DataArray | None = None, **options) -> go.Figure:
    """:func:`viewer_spec` as a plotly Figure (validated; for notebooks and ``fig.show()``).

    Parameters
    ----------
    fit, observed, **options
        As :func:`viewer_spec`.

    Returns
    -------
    plotly.graph_objects.Figure
    """
    fig = go.Figure(viewer_spec(fit, observed, **options))
    return fig.update_layout(template="none")  # plotly.py would apply its default one


def view(
    fit: xr.Dataset,
    observed: xr.DataArray | None | str = "auto",
    **options,
) -> go.Figure:
    """Show a fit in the interactive viewer (a notebook cell displays the returned figure).

    Parameters
    ----------
    fit : xarray.Dataset
        An opened fit store (:func:`pipeline.inspect.open_fit`).
    observed : xarray.DataArray, None or "auto"
        Observed keypoints; ``"auto"`` opens the fit's tracks store when it is still
        there (and shows the fit alone otherwise).
    **options
        Passed to :func:`viewer_figure` (``individual``, ``max_frames``, ``joint``, ...).

    Returns
    -------
    plotly.graph_objects.Figure
    """
    if isinstance(observed, str):
        try:
            observed = open_observed(fit)
        except (FileNotFoundError, ValueError, OSError):
            observed = None
    return viewer_figure(fit, observed, **options)
