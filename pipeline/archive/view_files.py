"""Read one 2D tracks file per camera plus their calibration into one multi-view dataset.

:func:`read_views` reads every view's file with the reader registry
(:func:`pipeline.tracks.read_tracks`: DeepLabCut, SLEAP, LightningPose, ...), reads the
calibration (:func:`pipeline.cameras.read_calibration`), matches views to cameras by name
(exactly, after normalisation, or in sorted order for unnamed views:
:func:`pipeline.cameras.pairing.pair_views`), checks that every view tracks the same
keypoints and individuals, aligns the frames (:mod:`pipeline.tracks.multiview`'s sync rule)
and returns a validated multi-view dataset. Everything is checked before anything is
written: each problem is one :class:`~pipeline.errors.TracksError` or
:class:`~pipeline.errors.CameraError` naming the file, the view and the valid choices.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from pipeline.archive.view_people import match_people, people_options
from pipeline.cameras import read_calibration
from pipeline.cameras.pairing import pair_views
from pipeline.cameras.view_selection import ViewSelection
from pipeline.errors import ConfigError, TracksError
from pipeline.provenance.hashing import json_sha256, tree_sha256
from pipeline.tracks import read_tracks
from pipeline.tracks.multiview import make_multiview_dataset
from pipeline.tracks.schema import check_up_axis

__all__ = ["read_views", "view_name", "views_fingerprint"]

#: Views as given: name -> file, or files alone (named after the files).
Views = Mapping[str, str | Path] | Sequence[str | Path]

#: ``time_origin`` choices: what time a session frame gets (see :func:`read_views`).
TIME_ORIGINS: dict[str, str] = {
    "frames": "time = session frame / fps (session frame 0, the first file's, at 0 s)",
    "pose2sim": "time = (k + 1) / fps, k the frame's index in the frame range: Pose2Sim's "
    ".trc Frame# and Time and its .mot time (Frame# 1 at 1/fps)",
}


def _with_time_origin(ds: xr.Dataset, origin: Any, source: str) -> xr.Dataset:
    """``ds`` with the ``time`` of ``origin`` (a :data:`TIME_ORIGINS` key) and its attr."""
    if origin == "pose2sim":
        fps = ds.attrs.get("fps")
        if not fps:
            raise ConfigError(f"{source}: time_origin 'pose2sim' needs a frame rate (fps)")
        attrs = dict(ds["time"].attrs)
        ds = ds.assign_coords(time=(np.arange(ds.sizes["time"]) + 1) / float(fps))
        ds["time"].attrs.update(attrs)
    ds.attrs["time_origin"] = origin
    ds.attrs["time_origin_rule"] = TIME_ORIGINS[origin]
    return ds


def view_name(path: str | Path) -> str:
    """The name of an unnamed view: its file's stem or its folder's name."""
    path = Path(path)
    return path.name if path.is_dir() else path.stem


def _as_mapping(views: Views) -> tuple[dict[str, Path], bool]:
    """(name -> path, whether the names were given)."""
    if isinstance(views, Mapping):
        return {str(k): Path(v) for k, v in views.items()}, True
    paths = [Path(v) for v in views]
    named = {view_name(p): p for p in paths}
    if len(named) != len(paths):
        names = [view_name(p) for p in paths]
        dupes = sorted({n for n in names if names.count(n) > 1})
        raise TracksError(
            f"views {dupes} have the same file name in different folders; name them: "
            "--views CAMERA=PATH"
        )
    return named, False


def _pad_individuals(read: list[tuple[str, Path, xr.Dataset]]) -> list[tuple]:
    """Unassociated candidates (``person0..``) padded with NaN to the largest count."""
    if not all(ds.attrs.get("individuals_associated") is False for _, _, ds in read):
        return read
    widest = max(read, key=lambda r: r[2].sizes["individual"])[2]["individual"].values
    return [(v, p, ds.reindex(individual=widest)) for v, p, ds in read]


def _names(ds: xr.Dataset, dim: str) -> list[str]:
    return [str(v) for v in ds[dim].values.tolist()]


def _check_same(dim: str, first: tuple[str, Path, list[str]], other: tuple[str, Path, list[str]]):
    (v0, p0, n0), (v, p, n) = first, other
    if n != n0:
        only, lacks = sorted(set(n) - set(n0)), sorted(set(n0) - set(n))
        detail = f"extra {only}, missing {lacks}" if only or lacks else f"order {n} vs {n0}"
        raise TracksError(
            f"{p}: view {v!r}: its {dim}s differ from view {v0!r}'s ({p0}): {detail}; every "
            f"view of a session must track the same {dim}s"
        )


def _offsets(
    views: list[str], offsets: Mapping[str, int] | None, source: str, aliases: Mapping[str, str]
) -> list[int]:
    offsets = {aliases.get(k, k): v for k, v in (offsets or {}).items()}
    unknown = sorted(set(offsets) - set(views))
    if unknown:
        raise TracksError(f"{source}: frame offsets for unknown views {unknown}; views: {views}")
    out = []
    for v in views:
        value = offsets.get(v, 0)
        if not isinstance(value, int | np.integer) or value < 0:
            raise TracksError(f"{source}: view {v!r}: frame offset must be >= 0, got {value!r}")
        out.append(int(value))
    return out


def read_views(
    views: Views,
    calibration: str | Path,
    *,
    unit: str | None = None,
    frame_offset: Mapping[str, int] | None = None,
    fps: float | None = None,
    format: str | None = None,
    session: str | None = None,
    **options: Any,
) -> xr.Dataset:
    """A multi-view tracks dataset from one 2D file per camera and a calibration file.

    Parameters
    ----------
    views : mapping of str to path, or sequence of paths
        View (camera) name -> its 2D tracks file or folder, e.g. ``{"camA": "a.csv"}``,
        any order; or the files alone, named after them (``pose/cam01_json``).
    calibration : str or Path
        Anipose/Pose2Sim TOML or OpenCV YAML/JSON. Views pair with its cameras by name,
        by normalised name (``cam01`` = ``cam_01``) or, for unnamed views, in sorted order
        (:func:`pipeline.cameras.pairing.pair_views`); ``attrs["view_pairing"]`` records
        the rule and ``attrs["view_names"]`` the names given, in view order.
    unit : str, optional
        Length unit of the calibration's extrinsics when the file records none.
    frame_offset : mapping of str to int, optional
        Per view (its given name or its camera's), the frame of its file that is session
        frame 0 (default 0). Without
        offsets every file must have the same number of frames.
    fps : float, optional
        Frame rate for files that do not record it.
    format : str, optional
        Reader name for every view (default: by suffix and content).
    session : str, optional
        Session name.
    **options
        Reader options for every view, except ``up_axis``: the up axis of the
        calibration's world (the views' own is their image's), kept as the store's
        ``up_axis`` attr. Calibration files do not record it (Pose2Sim's are Z up,
        Anipose's whatever the calibration chose): unknown unless given. And except
        the people options of :func:`pipeline.archive.view_people.people_options`
        (``person_id``, ``associate``, ``association_keypoints``, ...): views whose
        individuals are per-frame candidates (OpenPose-style JSON) are reduced to the one
        person the cameras agree on (:mod:`pipeline.cameras.association`). And
        ``frame_range=(start, stop)``: keep session frames ``start`` to ``stop - 1``.
        And ``time_origin``: ``"frames"`` (default) times each frame ``session frame /
        fps``, the first frame of the files at 0 s, a range's frames keeping theirs;
        ``"pose2sim"`` numbers the kept frames from 1 at ``1 / fps``, as Pose2Sim's
        ``.trc`` (``Frame#``, ``Time``) and ``.mot`` do, so exports line up with them row
        by row. Kept in ``attrs["time_origin"]``. And ``view_max_error`` (px),
        ``view_min_confidence`` and ``view_min_views``: the views a fit believes per frame
        and keypoint (:mod:`pipeline.cameras.view_selection`, Pose2Sim's rule), kept as the
        ``view_selection`` attr; every detection stays in the store.

    Returns
    -------
    xarray.Dataset
        Validated multi-view tracks (:mod:`pipeline.tracks.multiview`).

    Raises
    ------
    CameraError
        The calibration is malformed, or has no camera named as a view.
    TracksError
        A view that is not 2D, whose keypoints or individuals differ from the others',
        frame counts that differ without declared offsets, or a bad offset.
    FileNotFoundError
        A file does not exist.
    """
    if not views:
        raise TracksError("no views given; pass --views NAME=FILE ... (one per camera)")
    given, named = _as_mapping(views)
    names = list(given)
    world_up = options.pop("up_axis", None)
    people = people_options(options, str(calibration))
    selection = _view_selection(options, str(calibration))
    frame_range = options.pop("frame_range", None)
    time_origin = options.pop("time_origin", "frames")
    if time_origin not in TIME_ORIGINS:
        raise ConfigError(
            f"{calibration}: option 'time_origin' = {time_origin!r}; valid: "
            + ", ".join(TIME_ORIGINS)
        )
    calibration = Path(calibration)
    cameras, rule = pair_views(
        read_calibration(calibration, unit=unit), names, named=named, source=str(calibration)
    )
    aliases = {cam.name: name for name, cam in zip(names, cameras, strict=True)}
    offsets = _offsets(names, frame_offset, str(calibration), aliases)
    read = []
    for name, path in given.items():
        ds = read_tracks(path, format=format, fps=fps, **options)
        if ds.sizes["space"] != 2:
            raise TracksError(
                f"{path}: view {name!r}: {ds.sizes['space']}-D tracks; a camera view has 2D "
                "pixel keypoints (x, y)"
            )
        read.append((name, path, ds))
    read = _pad_individuals(read)
    first = read[0]
    for dim in ("keypoint", "individual"):
        for other in read[1:]:
            _check_same(
                dim,
                (first[0], first[1], _names(first[2], dim)),
                (other[0], other[1], _names(other[2], dim)),
            )
    counts = [ds.sizes["time"] for _, _, ds in read]
    if frame_offset is None and len(set(counts)) > 1:
        listing = ", ".join(f"{v}: {n}" for v, n in zip(names, counts, strict=True))
        raise TracksError(
            f"{calibration.parent}: the views have different frame counts ({listing}) and no "
            "frame offset is declared; pass --offset VIEW=N (frame N of that view's file is "
            "session frame 0) or trim the files"
        )
    n = min(c - o for c, o in zip(counts, offsets, strict=True))
    if n <= 0:
        raise TracksError(f"{calibration.parent}: the frame offsets {offsets} leave no frames")
    position = np.stack(
        [ds["position"].values[o : o + n] for (_, _, ds), o in zip(read, offsets, strict=True)], 1
    )
    confidence = np.stack(
        [ds["confidence"].values[o : o + n] for (_, _, ds), o in zip(read, offsets, strict=True)],
        1,
    )
    rates = {ds.attrs.get("fps") for _, _, ds in read}
    if len(rates) > 1:
        raise TracksError(f"{calibration.parent}: the views have different frame rates {rates}")
    out = make_multiview_dataset(
        position,
        confidence,
        cameras=cameras,
        keypoints=_names(first[2], "keypoint"),
        individuals=_names(first[2], "individual"),
        fps=first[2].attrs.get("fps"),
        frame_offset=offsets,
        source_software=first[2].attrs.get("source_software") or "unknown",
        session=session,
        view_files=[str(p) for _, p, _ in read],
        extra_attrs={
            "calibration_file": str(calibration),
            "view_pairing": rule,
            "view_names": names,
            **_shared_attrs(read),
            "up_axis": check_up_axis(world_up, f"{calibration}: up_axis"),
            **({"view_selection": selection.to_dict()} if selection else {}),
        },
    )
    if all("person_id" in ds for _, _, ds in read):
        pairs = zip(read, offsets, strict=True)
        ids = [ds["person_id"].fillna(-1).values[o : o + n] for (_, _, ds), o in pairs]
        out["person_id"] = (("time", "view", "individual"), np.stack(ids, 1).astype(np.int32))
    if frame_range is not None:
        start, stop = (int(f) for f in frame_range)
        if not 0 <= start < stop <= out.sizes["time"]:
            raise TracksError(
                f"{calibration}: frame_range {list(frame_range)}: the session has frames 0 to "
                f"{out.sizes['time'] - 1}; expected 0 <= start < stop <= {out.sizes['time']}"
            )
        out = out.isel(time=slice(start, stop))
    out = _with_time_origin(out, time_origin, str(calibration))
    return match_people(out, people)


#: Reader options of the views a fit believes (:class:`pipeline.cameras.ViewSelection`).
VIEW_SELECTION_OPTIONS = {
    "view_max_error": float,
    "view_min_confidence": float,
    "view_min_views": int,
}


def _view_selection(options: dict[str, Any], source: str) -> ViewSelection | None:
    """Pop the ``view_*`` options into a rule (None without ``view_max_error``).

    Raises
    ------
    ConfigError
        A value that is not a number of its kind or out of range, or ``view_min_*``
        without ``view_max_error``.
    """
    got = {k: options.pop(k) for k in VIEW_SELECTION_OPTIONS if k in options}
    if not got:
        return None
    if "view_max_error" not in got:
        raise ConfigError(
            f"{source}: options {sorted(got)} need view_max_error (px): the reprojection "
            "error a camera set must stay under"
        )
    values = {}
    for key, kind in VIEW_SELECTION_OPTIONS.items():
        if key not in got:
            continue
        value = got[key]
        try:
            number = float(value) if not isinstance(value, bool) else math.nan
        except (TypeError, ValueError):
            number = math.nan
        if kind is int and not (math.isfinite(number) and number.is_integer()):
            number = math.nan
        if math.isnan(number):
            what = "an integer" if kind is int else "a number"
            raise ConfigError(f"{source}: option {key}={value!r}; expected {what}")
        values[key] = kind(number)
    return ViewSelection(
        values["view_max_error"],
        values.get("view_min_confidence", 0.0),
        values.get("view_min_views", 2),
    )


def _shared_attrs(read: list[tuple[str, Path, xr.Dataset]]) -> dict[str, Any]:
    """Reader attrs that describe every view alike (skeleton, association), when equal."""
    keys = ("skeleton", "individuals_associated", "individuals_note", "source_format")
    out = {}
    for key in keys:
        values = [ds.attrs.get(key) for _, _, ds in read]
        if values[0] is not None and all(v == values[0] for v in values):
            out[key] = values[0]
    return out


def views_fingerprint(views: Views, calibration: str | Path, settings: Mapping[str, Any]) -> str:
    """sha256 of every view file's bytes, the calibration's, and the reading settings."""
    given, named = _as_mapping(views)
    recipe = {
        "views": {str(v): tree_sha256(p) for v, p in given.items()},
        "calibration": tree_sha256(calibration),
        "settings": {k: str(v) for k, v in sorted(settings.items())},
    }
    if not named:
        recipe["unnamed"] = True
    return json_sha256(recipe)
