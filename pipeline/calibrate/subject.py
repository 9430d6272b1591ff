"""``calibrate(plan, tracks, config) -> Calibration``: fit the body to one individual.

Frames are chosen from every session given (:mod:`pipeline.calibrate.frame_selection`), the poses
of those frames and the plan's calibration parameters (:mod:`pipeline.calibrate.params`)
are solved jointly (:mod:`pipeline.calibrate.solve`), and the result is the calibrated
plan with its record (:mod:`pipeline.calibrate.calibration_record`).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from pipeline.bodyplan.io import body_plan_sha256
from pipeline.bodyplan.model import BodyPlan
from pipeline.calibrate.calibration_record import FORMAT, Calibration, as_floats, exact_floats
from pipeline.calibrate.frame_selection import choose_frames
from pipeline.calibrate.multiview_targets import (
    proxy_points,
    stack_views,
    view_cameras,
    view_targets,
)
from pipeline.calibrate.params import CalibrationSpec, Parameters, resolve
from pipeline.calibrate.single_view import image_targets
from pipeline.calibrate.solve import METHODS, ShapeSolution, solve_shape
from pipeline.cameras import Camera
from pipeline.errors import CalibrationError, flag
from pipeline.provenance.fingerprint import kinefit_version
from pipeline.provenance.hashing import json_sha256
from pipeline.solve import SolverConfig
from pipeline.solve.mappers import CalibratedCameras, XYView
from pipeline.store.tracks import open_tracks
from pipeline.synth.sessions import body_size
from pipeline.tracks.confidence import confidence_weights
from pipeline.tracks.mapping import map_keypoints
from pipeline.tracks.multiview import is_multiview
from pipeline.tracks.units import LENGTH_UNITS, UNKNOWN, canonical_unit

__all__ = ["CalibrationConfig", "SessionTargets", "calibrate", "session_targets"]

_OBSERVATION = {"3-D": "3d", "2-D views": "cameras", "one 2-D view": "image"}


@dataclass(frozen=True)
class CalibrationConfig:
    """Settings of a calibration.

    Attributes
    ----------
    n_frames : int
        Frames chosen over all sessions (default 1000; 500-2000 is the useful range).
    min_frames : int
        Fewer well-observed frames is an error (default 50).
    min_observed : float
        Fraction of the mapped keypoints a chosen frame observes (default 0.6).
    method : {"schur", "alternation"}
        Shape step (see :mod:`pipeline.calibrate.solve`; default ``schur``).
    max_iterations : int
        Shape steps at most (default 30).
    tolerance : float
        Stop once a step changes no scale by more than this (default 1e-5).
    spec : mapping or None
        Replaces the plan's own ``calibration`` field (same keys).
    solver : SolverConfig
        The per-frame pose solver.
    """

    n_frames: int = 1000
    min_frames: int = 50
    min_observed: float = 0.6
    method: str = "schur"
    max_iterations: int = 30
    tolerance: float = 1e-5
    spec: Mapping[str, Any] | None = None
    solver: SolverConfig = field(default_factory=SolverConfig)

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise CalibrationError(
                f"calibration.method: {self.method!r} is not one of {', '.join(METHODS)}"
            )
        if self.n_frames < 1 or self.min_frames < 1 or not 0 < self.min_observed <= 1:
            raise CalibrationError(
                "calibration: n_frames and min_frames must be >= 1 and min_observed in (0, 1]"
            )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON (the record's settings and the fingerprint)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["solver"] = self.solver.to_dict()
        out["spec"] = dict(self.spec) if self.spec is not None else None
        return out


@dataclass(frozen=True)
class SessionTargets:
    """One individual's targets in one session, in the plan's joint order.

    Attributes
    ----------
    name : str
    individual : str
    targets : (T, J, 3) array, or pixels (T, C, J, 2) with ``cameras``
    weights : (T, J) array, or (T, C, J) with ``cameras``
        Confidence (1 where unknown), 0 where missing.
    cameras : tuple of Camera
        A multi-view 2D session's calibrated cameras, one per view (empty for 3D).
    image_scale : float or None
        A single-view 2D session's estimated scale (plan length per pixel): its targets
        are ``(T, J, 2)`` pixels times it (:mod:`pipeline.calibrate.single_view`).
    """

    name: str
    individual: str
    targets: np.ndarray
    weights: np.ndarray
    cameras: tuple[Camera, ...] = ()
    image_scale: float | None = None


def session_targets(
    plan: BodyPlan,
    tracks: xr.Dataset | str | Path,
    individual: str | None = None,
    keypoint_map: Mapping[str, str] | str | Path | None = None,
    name: str | None = None,
    *,
    single_view: bool = False,
) -> SessionTargets:
    """Read one individual's keypoints of a session as the plan's targets.

    A multi-view 2D session (:mod:`pipeline.tracks.multiview`) gives its pixels and its
    calibrated cameras (:mod:`pipeline.calibrate.multiview_targets`); with
    ``single_view``, a single-view 2D session gives its pixels at the image scale
    estimated with the template (:mod:`pipeline.calibrate.single_view`; depth is not
    observed).

    Raises
    ------
    CalibrationError
        The tracks are 2-D without calibrated cameras, a view has no camera, the tracks
        (or the cameras' extrinsics) are in another length unit than the plan, or
        ``individual`` is not in them (the names are listed), or the session has several
        individuals and none was chosen.
    """
    source = str(tracks) if not isinstance(tracks, xr.Dataset) else None
    ds = tracks if isinstance(tracks, xr.Dataset) else open_tracks(tracks)
    name = name or str(ds.attrs.get("session") or source or "session")
    cameras = view_cameras(ds, plan, name) if is_multiview(ds) else ()
    image = not cameras and ds.sizes["space"] == 2 and single_view
    if not cameras and ds.sizes["space"] != 3 and not image:
        raise CalibrationError(
            f"{name}: 2-D tracks without cameras: calibration needs 3-D tracks (x, y, z) or "
            "a multi-view session with its calibrated cameras (kinefit ingest --views ... "
            "--calibration FILE), or, for one view, --single-view (segment scales through "
            "the image plane at the estimated image scale; depth unobservable)"
        )
    units = canonical_unit(ds.attrs.get("unit")), canonical_unit(plan.unit)
    if (
        not image
        and all(u in LENGTH_UNITS and u not in ("px", UNKNOWN) for u in units)
        and units[0] != units[1]
    ):
        raise CalibrationError(
            f"{name}: the tracks are in {units[0]} but the body plan in {units[1]}; convert "
            f"the tracks (read them with to_unit={units[1]!r}, or ingest with the plan's unit)"
        )
    names = [str(i) for i in ds["individual"].values]
    if individual is None:
        if len(names) > 1:
            raise CalibrationError(
                f"{name}: several individuals ({', '.join(names)}); "
                f"choose one ({flag('individual')})"
            )
        individual = names[0]
    if individual not in names:
        raise CalibrationError(
            f"{name}: no individual {individual!r}; individuals: {', '.join(names)}"
        )
    one = ds.sel(individual=individual)
    mapping = map_keypoints(one["keypoint"].values, plan.joint_names, keypoint_map, source=name)
    if cameras:
        return SessionTargets(name, individual, *view_targets(one, mapping), cameras=cameras)
    if image:
        targets, weights, scale = image_targets(
            plan, ds.sel(individual=[individual]), mapping, name
        )
        return SessionTargets(name, individual, targets, weights, image_scale=scale)
    position = np.asarray(one["position"].transpose("time", "keypoint", "space").values)
    targets = mapping.gather(position, axis=1)
    conf = mapping.gather(np.asarray(one["confidence"].transpose("time", "keypoint").values), 1)
    weights = confidence_weights(conf, targets)
    return SessionTargets(name, individual, targets, weights)


def _segments(params: Parameters, sol: ShapeSolution, plan: BodyPlan) -> list[dict[str, Any]]:
    theta, cov = sol.theta, sol.covariance
    scales = params.segment_scales(theta)
    t = params.template_offsets
    out = []
    for j, grp in enumerate(params.joint_group):
        if not params.scaled[j] or j in params.markers or not np.any(t[j]):
            continue
        idx = ([0] if params.n_global else []) + ([params.n_global + grp] if grp >= 0 else [])
        var = float(cov[np.ix_(idx, idx)].sum()) if idx else 0.0
        observed = bool(sol.observed_params[idx].all()) if idx else False
        out.append(
            {
                "joint": plan.joint_names[j],
                "group": params.group_names[grp] if grp >= 0 else None,
                "template_length": float(np.linalg.norm(t[j])),
                "template_offset": exact_floats(t[j]),
                "length": float(np.linalg.norm(plan.joints[j].offset_pos)),
                "scale": float(scales[j]),
                "scale_std": float(np.sqrt(max(var, 0.0))),
                "observed": observed,
            }
        )
    return out


def _check_observed(params: Parameters, sol_observed: np.ndarray, source: str) -> None:
    """Explicitly listed groups and markers must be observed."""
    first = params.n_global + len(params.group_names)
    problems = [
        f"symmetry group {params.group_names[k]!r}"
        for k in sorted(params.explicit_groups)
        if not sol_observed[params.n_global + k]
    ]
    problems += [
        f"marker {params.template.joint_names[m]!r}"
        for i, m in enumerate(params.markers)
        if not sol_observed[first + 3 * i]
    ]
    if problems:
        raise CalibrationError(
            f"{source}: {', '.join(problems)}: no observed keypoint at or below it in the "
            "calibration frames, so it cannot be calibrated; map a keypoint below it or "
            "remove it from the plan's calibration field"
        )


def calibrate(
    plan: BodyPlan,
    tracks: Sequence[xr.Dataset | str | Path | SessionTargets] | xr.Dataset | str | Path,
    config: CalibrationConfig | None = None,
    *,
    individual: str | None = None,
    keypoint_map: Mapping[str, str] | str | Path | None = None,
    identity: str | None = None,
    single_view: bool = False,
) -> Calibration:
    """Calibrate ``plan`` to one individual from one or several sessions.

    Parameters
    ----------
    plan : BodyPlan
        The template; its ``calibration`` field (or ``config.spec``) says what may change.
    tracks : tracks dataset(s), store path(s) or SessionTargets
        Sessions of the one individual (movement poses schema, 3-D, the plan's unit).
    config : CalibrationConfig, optional
    individual : str, optional
        The individual to calibrate in every session (needed when a session has several).
    keypoint_map : mapping or YAML file, optional
        Track keypoint -> joint renames.
    identity : str, optional
        Recorded (default: the individual's name).
    single_view : bool
        Calibrate single-view 2D sessions through the image plane at their estimated
        image scale (:mod:`pipeline.calibrate.single_view`); without it they are refused.

    Returns
    -------
    Calibration

    Raises
    ------
    CalibrationError
        Too few well-observed frames, an unknown joint in the calibration field, a listed
        segment or marker without an observed keypoint below it; nothing is written.
    """
    config = config or CalibrationConfig()
    items = [tracks] if isinstance(tracks, xr.Dataset | str | Path | SessionTargets) else tracks
    sessions = [
        s
        if isinstance(s, SessionTargets)
        else session_targets(plan, s, individual, keypoint_map, single_view=single_view)
        for s in items
    ]
    if not sessions:
        raise CalibrationError("calibrate: no sessions given")
    source = plan.source or plan.name or "<plan>"
    given = config.spec if config.spec is not None else getattr(plan, "calibration", None)
    asked = CalibrationSpec.from_mapping(given, source)
    shape = asked
    if any(s.image_scale is not None for s in sessions):  # one view: the segments only
        shape = dataclasses.replace(asked, markers=())
    params = resolve(plan, shape, size=body_size(plan))
    sessions, mapper, proxies = _observation(sessions, source)
    choice = choose_frames(
        proxies,
        config.n_frames,
        min_frames=config.min_frames,
        min_observed=config.min_observed,
        names=[s.name for s in sessions],
    )
    targets = np.concatenate([s.targets[f] for s, f in zip(sessions, choice.frames, strict=True)])
    weights = np.concatenate([s.weights[f] for s, f in zip(sessions, choice.frames, strict=True)])
    observed = (weights > 0).any(axis=0)
    if not observed.any():
        raise CalibrationError(f"{source}: no keypoint observed in the calibration frames")
    sol = solve_shape(
        params,
        targets,
        weights,
        config.solver,
        method=config.method,
        max_iterations=config.max_iterations,
        tolerance=config.tolerance,
        mapper=mapper,
    )
    _check_observed(params, sol.observed_params, source)
    calibrated = dataclasses.replace(params.apply(sol.theta), calibration=asked.to_dict())
    record = _record(params, sol, calibrated, sessions, choice.frames, config, identity)
    extras = {**(plan.extras or {}), "x-calibration": record}
    calibrated = dataclasses.replace(calibrated, extras=extras, source=None)
    return Calibration(calibrated, record)


def _kind(session: SessionTargets) -> str:
    if session.image_scale is not None:
        return "one 2-D view"
    return "2-D views" if session.cameras else "3-D"


def _observation(sessions: list[SessionTargets], source: str):
    """The sessions in one observation model, the mapper, and the frames' 3D proxies.

    3D sessions are their own proxies (no mapper). Multi-view sessions are laid out in
    the views of all their distinct cameras (:func:`stack_views`); their proxies are the
    triangulated keypoints.
    """
    kind = {s.name: _kind(s) for s in sessions}
    if len(set(kind.values())) > 1:
        names = [f"{name} ({what})" for name, what in kind.items()]
        raise CalibrationError(
            f"{source}: the sessions mix 3-D tracks and 2-D camera views ({', '.join(names)}); "
            "calibrate each kind on its own"
        )
    if sessions[0].image_scale is not None:  # one view: the image plane at each scale
        return sessions, XYView(), [s.targets for s in sessions]
    if not sessions[0].cameras:
        return sessions, None, [s.targets for s in sessions]
    single = [s.name for s in sessions if len(s.cameras) < 2]
    if single:
        raise CalibrationError(
            f"{', '.join(single)}: one camera: calibration through cameras needs two or more "
            "views of a session (one view cannot tell the body's size from its distance)"
        )
    proxies = [proxy_points(s.cameras, s.targets, s.weights) for s in sessions]
    cameras, targets, weights = stack_views(
        [s.cameras for s in sessions], [s.targets for s in sessions], [s.weights for s in sessions]
    )
    stacked = [
        dataclasses.replace(s, targets=t, weights=w, cameras=cameras)
        for s, t, w in zip(sessions, targets, weights, strict=True)
    ]
    return stacked, CalibratedCameras(cameras), proxies


def calibration_fingerprint(plan: BodyPlan, config: CalibrationConfig, identity: str) -> str:
    """What a stored calibration depends on: template, settings, identity, version."""
    return json_sha256(
        {
            "template": body_plan_sha256(plan),
            "settings": config.to_dict(),
            "identity": identity,
            "kinefit": kinefit_version(),
        }
    )


def _record(params, sol, calibrated, sessions, frames, config, identity) -> dict[str, Any]:
    std = np.sqrt(np.clip(np.diag(sol.covariance), 0, None))
    first = params.n_global + len(params.group_names)
    markers = [
        {
            "joint": params.template.joint_names[m],
            "offset": as_floats(calibrated.joints[m].offset_pos),
            "template_offset": exact_floats(params.template.joints[m].offset_pos),
            "std": as_floats(std[first + 3 * i : first + 3 * i + 3]),
        }
        for i, m in enumerate(params.markers)
    ]
    identity = identity or sessions[0].individual
    return {
        "format": FORMAT,
        "identity": identity,
        "fingerprint": calibration_fingerprint(params.template, config, identity),
        "template_sha256": body_plan_sha256(params.template),
        "kinefit_version": kinefit_version(),
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "settings": config.to_dict(),
        "method": config.method,
        "iterations": sol.iterations,
        "converged": bool(sol.converged),
        "objective": as_floats(sol.history),
        "sessions": [
            {"name": s.name, "individual": s.individual, "frames": [int(i) for i in f]}
            for s, f in zip(sessions, frames, strict=True)
        ],
        "n_frames": int(sum(len(f) for f in frames)),
        "observation": _OBSERVATION[_kind(sessions[0])],
        "cameras": [c.name for c in sessions[0].cameras],
        "image_scales": {s.name: s.image_scale for s in sessions if s.image_scale is not None},
        "residual_unit": "px" if sessions[0].cameras else params.template.unit,
        "rms_before": float(np.nanmean(sol.template_fit.rms_error)),
        "rms_after": float(np.nanmean(sol.fit.rms_error)),
        "global_scale": {
            "value": float(sol.theta[0]) if params.n_global else 1.0,
            "std": float(std[0]) if params.n_global else 0.0,
        },
        "segments": _segments(params, sol, calibrated),
        "markers": markers,
        "session_scales": {},
    }
