"""Calibration targets of multi-view 2D sessions: pixels, their cameras, their 3D proxies.

A multi-view tracks store (:mod:`pipeline.tracks.multiview`) observes the body through
its calibrated cameras, so the calibration fits the plan's parameters to the pixels
(:class:`~pipeline.solve.mappers.CalibratedCameras`, the cameras held fixed). Sessions of
one individual may come from different rigs: :func:`stack_views` lays every distinct
camera side by side, and a session's frames are missing (weight 0) in the other rigs'
views. Frames are chosen on each frame's triangulated keypoints (:func:`proxy_points`,
at least two views), which are also what "well observed" means here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

from pipeline.bodyplan.model import BodyPlan
from pipeline.cameras import Camera, triangulate
from pipeline.errors import CalibrationError, TracksError
from pipeline.tracks.confidence import confidence_weights
from pipeline.tracks.mapping import KeypointMapping
from pipeline.tracks.multiview import session_cameras

__all__ = ["proxy_points", "stack_views", "view_cameras", "view_targets"]


def view_cameras(ds: xr.Dataset, plan: BodyPlan, name: str) -> tuple[Camera, ...]:
    """The cameras of a multi-view session, one per view, in the plan's length unit.

    Raises
    ------
    CalibrationError
        No cameras stored, a view without its camera (both lists named), or extrinsics
        in another length unit than the plan.
    """
    try:
        cameras = tuple(session_cameras(ds, name))
    except TracksError as exc:
        raise CalibrationError(
            f"{exc}; calibrating a 2-D session needs its calibrated cameras (kinefit ingest "
            "--views ... --calibration FILE)"
        ) from exc
    names = [c.name for c in cameras]
    views = [str(v) for v in np.asarray(ds["view"].values).tolist()]
    if names != views:
        missing = [v for v in views if v not in names]
        raise CalibrationError(
            f"{name}: attrs.cameras: views {missing or views} have no camera (views: "
            f"{', '.join(views)}; cameras: {', '.join(names) or 'none'}); every view needs "
            "its calibrated camera, in view order"
        )
    unit = cameras[0].unit
    if plan.unit and unit not in ("unknown", plan.unit):
        raise CalibrationError(
            f"{name}: the cameras' extrinsics are in {unit!r} but the body plan is in "
            f"{plan.unit!r}; ingest again with the calibration in {plan.unit!r} (--unit) or "
            "use a plan in the cameras' unit"
        )
    return cameras


def view_targets(one: xr.Dataset, mapping: KeypointMapping) -> tuple[np.ndarray, np.ndarray]:
    """One individual's pixels in the plan's joint order.

    Parameters
    ----------
    one : xarray.Dataset
        A multi-view session with its ``individual`` selected.
    mapping : KeypointMapping

    Returns
    -------
    targets : (T, C, J, 2) array
        Pixels, NaN where a view does not see a joint.
    weights : (T, C, J) array
        Confidence (1 where unknown), 0 where missing.
    """
    position = np.asarray(one["position"].transpose("time", "view", "keypoint", "space").values)
    targets = mapping.gather(position, axis=2)
    conf = np.asarray(one["confidence"].transpose("time", "view", "keypoint").values)
    return targets, confidence_weights(mapping.gather(conf, axis=2), targets)


def proxy_points(cameras: Sequence[Camera], targets: np.ndarray, weights: np.ndarray):
    """``(T, J, 3)`` each frame's keypoints triangulated from two or more views, else NaN."""
    pix = np.where((weights > 0)[..., None], targets, np.nan).transpose(0, 2, 1, 3)
    return triangulate(cameras, pix, weights.transpose(0, 2, 1))


def stack_views(
    cameras: Sequence[Sequence[Camera]], targets: Sequence[np.ndarray], weights
) -> tuple[tuple[Camera, ...], list[np.ndarray], list[np.ndarray]]:
    """Every session's pixels in the views of all its distinct cameras.

    Parameters
    ----------
    cameras : sequence of camera sequences
        Each session's cameras.
    targets, weights : sequences of (T_i, C_i, J, 2) and (T_i, C_i, J) arrays

    Returns
    -------
    cameras : tuple of Camera
        The distinct cameras (equal calibrations count once), first seen first.
    targets, weights : lists of (T_i, C, J, 2) and (T_i, C, J) arrays
        NaN and 0 in the views of other sessions' cameras.
    """
    distinct: list[Camera] = []
    keys: list[str] = []
    slots = []
    for cams in cameras:
        mine = []
        for cam in cams:
            key = repr(sorted(cam.to_dict().items()))
            if key not in keys:
                keys.append(key)
                distinct.append(cam)
            mine.append(keys.index(key))
        slots.append(mine)
    out_t, out_w = [], []
    for mine, t, w in zip(slots, targets, weights, strict=True):
        full_t = np.full((t.shape[0], len(distinct)) + t.shape[2:], np.nan)
        full_w = np.zeros((w.shape[0], len(distinct), w.shape[2]))
        full_t[:, mine], full_w[:, mine] = t, w
        out_t.append(full_t)
        out_w.append(full_w)
    return tuple(distinct), out_t, out_w
