"""Multi-view tracks: 2D keypoints of one session seen by several calibrated cameras.

Contract::

    position     (time, view, space, keypoint, individual)  float32 pixels, NaN = missing
    confidence   (time, view, keypoint, individual)         float32, NaN = unknown
    coords       time, view (the camera names), space ["x", "y"], keypoint, individual
    attrs        the tracks attrs (source_software, ds_type="poses", fps, time_unit,
                 session, unit="px", ...) plus
                 cameras       [Camera.to_dict(), ...] in the order of ``view``
                 frame_offset  [int, ...] in the order of ``view`` (see below)
                 camera_unit   the extrinsics' length unit (the world's unit)
                 view_files    [path, ...] the file each view was read from

Frame sync: session frame ``t`` of view ``v`` is frame ``t + frame_offset[v]`` of that
view's own file (offsets >= 0; all 0 when the videos were triggered together). Ingest
applies the offsets, so the stored arrays are already aligned on ``time``; the session
spans the frames every view has, ``min(n_frames[v] - frame_offset[v])``.

A one-view session is valid too (one calibrated camera). Plain 2D tracks without a
``view`` dim are the single-camera image-plane case (:mod:`pipeline.tracks.schema`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import xarray as xr

from pipeline.cameras import Camera
from pipeline.errors import CameraError, TracksError
from pipeline.tracks.schema import PLURAL_DIMS, _check_attrs, _check_names, _check_time

__all__ = [
    "MULTIVIEW_CONFIDENCE_DIMS",
    "MULTIVIEW_DIMS",
    "is_multiview",
    "make_multiview_dataset",
    "session_cameras",
    "validate_multiview",
]

MULTIVIEW_DIMS: tuple[str, ...] = ("time", "view", "space", "keypoint", "individual")
MULTIVIEW_CONFIDENCE_DIMS: tuple[str, ...] = ("time", "view", "keypoint", "individual")


def is_multiview(ds: xr.Dataset) -> bool:
    """Whether ``ds`` is a multi-view tracks dataset (it has a ``view`` dim)."""
    return "view" in ds.dims


def make_multiview_dataset(
    position: np.ndarray,
    confidence: np.ndarray | None,
    *,
    cameras: Sequence[Camera],
    keypoints: Sequence[str],
    individuals: Sequence[str],
    fps: float | None = None,
    frame_offset: Sequence[int] | None = None,
    source_software: str = "kinefit",
    session: str | None = None,
    view_files: Sequence[str] | None = None,
    extra_attrs: Mapping[str, Any] | None = None,
) -> xr.Dataset:
    """Build a validated multi-view tracks dataset.

    Parameters
    ----------
    position : ndarray, shape (n_frames, n_views, 2, n_keypoints, n_individuals)
        Pixels (x right, y down), NaN where a view does not see a keypoint.
    confidence : ndarray, shape (n_frames, n_views, n_keypoints, n_individuals), optional
        Detection confidences; default NaN (unknown).
    cameras : sequence of Camera
        One per view, in view order; their names become the ``view`` coordinate.
    keypoints, individuals : sequence of str
    fps : float, optional
        Frames per second (time in seconds then, else frame numbers).
    frame_offset : sequence of int, optional
        Per view, the frame of its own file that is session frame 0 (default 0s).
    source_software, session : str
    view_files : sequence of str, optional
        The file each view came from (provenance).
    extra_attrs : mapping, optional

    Returns
    -------
    xarray.Dataset
        Validated by :func:`validate_multiview`.
    """
    position = np.asarray(position, dtype=np.float32)
    if position.ndim != 5:
        raise TracksError(
            f"position: expected shape (time, view, space, keypoint, individual), got "
            f"{position.shape}"
        )
    n_frames, n_views = position.shape[:2]
    if confidence is None:
        shape = (n_frames, n_views, position.shape[3], position.shape[4])
        confidence = np.full(shape, np.nan, np.float32)
    time = np.arange(n_frames) / float(fps) if fps else np.arange(n_frames, dtype=np.float64)
    attrs: dict[str, Any] = {
        "source_software": source_software,
        "ds_type": "poses",
        "fps": None if fps is None else float(fps),
        "time_unit": "seconds" if fps else "frames",
        "source_file": None,
        "session": session,
        "unit": "px",
        "up_axis": None,
        "source_sha256": None,
        "cameras": [cam.to_dict() for cam in cameras],
        "frame_offset": [int(v) for v in (frame_offset or [0] * len(cameras))],
        "camera_unit": cameras[0].unit if cameras else "unknown",
        "view_files": [str(f) for f in view_files] if view_files else None,
        **dict(extra_attrs or {}),
    }
    ds = xr.Dataset(
        {
            "position": (MULTIVIEW_DIMS, position),
            "confidence": (MULTIVIEW_CONFIDENCE_DIMS, np.asarray(confidence, np.float32)),
        },
        coords={
            "time": time,
            "view": np.array([cam.name for cam in cameras], dtype=object),
            "space": np.array(["x", "y"], dtype=object),
            "keypoint": np.array([str(k) for k in keypoints], dtype=object),
            "individual": np.array([str(i) for i in individuals], dtype=object),
        },
        attrs=attrs,
    )
    return validate_multiview(ds, source=session or "<in-memory>")


def session_cameras(ds: xr.Dataset | Mapping[str, Any], source: str = "<tracks>") -> list[Camera]:
    """The cameras of a multi-view dataset (or its attrs), in view order.

    Raises
    ------
    TracksError
        The ``cameras`` attr is missing or a camera in it is malformed.
    """
    attrs = ds.attrs if isinstance(ds, xr.Dataset) else ds
    tables = attrs.get("cameras")
    if not isinstance(tables, list | tuple) or not tables:
        raise TracksError(f"{source}: attrs.cameras: missing; a multi-view session needs them")
    try:
        return [Camera.from_dict(dict(t), source=f"{source}: attrs.cameras") for t in tables]
    except CameraError as exc:
        raise TracksError(str(exc)) from exc


def _check_cameras(ds: xr.Dataset, source: str, problems: list[str]) -> None:
    try:
        cameras = session_cameras(ds, source)
    except TracksError as exc:
        problems.append(str(exc).removeprefix(f"{source}: "))
        return
    names = [cam.name for cam in cameras]
    views = [str(v) for v in np.asarray(ds["view"].values).tolist()] if "view" in ds.coords else []
    if names != views:
        problems.append(f"attrs.cameras: names {names} do not match the views {views} (in order)")
    offsets = ds.attrs.get("frame_offset")
    ok = isinstance(offsets, list | tuple) and len(offsets) == len(views)
    if not ok or not all(isinstance(o, int | np.integer) and o >= 0 for o in offsets):
        problems.append(
            f"attrs.frame_offset: expected {len(views)} whole numbers >= 0 (one per view), "
            f"got {offsets!r}"
        )


def validate_multiview(ds: xr.Dataset, source: str = "<in-memory>") -> xr.Dataset:
    """Check a multi-view tracks dataset against the contract; return it normalized.

    Normalization as :func:`pipeline.tracks.schema.validate_tracks` (dim order, float32,
    object-dtype names, default attrs).

    Raises
    ------
    TracksError
        Listing every problem: dims, variables, space not ``[x, y]``, time, duplicated
        names, cameras that do not parse or do not match the views, frame offsets.
    """
    ds = ds.rename({k: v for k, v in PLURAL_DIMS.items() if k in ds.dims or k in ds.coords})
    problems: list[str] = []
    missing = [d for d in MULTIVIEW_DIMS if d not in ds.dims]
    if missing:
        problems.append(f"missing dims {missing} (expected {list(MULTIVIEW_DIMS)})")
    for name, dims in (("position", MULTIVIEW_DIMS), ("confidence", MULTIVIEW_CONFIDENCE_DIMS)):
        if name not in ds.data_vars:
            problems.append(f"missing variable {name!r}; variables: {list(ds.data_vars)}")
        elif set(ds[name].dims) != set(dims):
            problems.append(f"{name}: expected dims {dims}, got {ds[name].dims}")
        elif not np.issubdtype(ds[name].dtype, np.floating):
            problems.append(f"{name}: expected float32, got dtype {ds[name].dtype}")
    if "space" in ds.dims and ds.sizes["space"] != 2:
        problems.append(f"space: multi-view tracks are 2D pixels (x, y), got {ds.sizes['space']}")
    elif "space" in ds.coords:
        got = [str(v) for v in np.asarray(ds["space"].values).tolist()]
        if got != ["x", "y"]:
            problems.append(f"space: expected names ['x', 'y'], got {got}")
    if "time" in ds.dims:
        _check_time(ds, problems)
    for dim in ("view", "keypoint", "individual"):
        if dim in ds.dims:
            _check_names(ds, dim, problems)
    _check_attrs(ds.attrs, problems)
    if not problems:
        _check_cameras(ds, source, problems)
    if problems:
        raise TracksError(
            f"{source}: not a valid multi-view tracks dataset:\n  - " + "\n  - ".join(problems)
        )
    ds = ds.assign(
        position=ds["position"].transpose(*MULTIVIEW_DIMS).astype(np.float32),
        confidence=ds["confidence"].transpose(*MULTIVIEW_CONFIDENCE_DIMS).astype(np.float32),
    )
    ds = ds.assign_coords(
        {
            d: np.array([str(v) for v in np.asarray(ds[d].values).tolist()], dtype=object)
            for d in ("view", "space", "keypoint", "individual")
        }
    )
    attrs = dict(ds.attrs)
    attrs.setdefault("fps", None)
    attrs.setdefault("time_unit", "seconds" if attrs["fps"] is not None else "frames")
    for key in ("source_software", "source_file", "session", "up_axis", "source_sha256"):
        attrs.setdefault(key, None)
    attrs.setdefault("unit", "px")
    attrs["frame_offset"] = [int(o) for o in attrs["frame_offset"]]
    if attrs["fps"] is not None:
        attrs["fps"] = float(attrs["fps"])
    ds.attrs = attrs
    return ds
