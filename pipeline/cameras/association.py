"""People matched across calibrated views: one detection per camera and frame.

A 2D pose estimator run on each camera separately lists every person it sees, in no
particular order (``person0``, ``person1``... of each frame and view are unrelated).
:func:`associate_people` picks, for each frame, the detection of each view that belongs
to one person seen consistently by the cameras, as Pose2Sim's single-person association
does:

1. every combination of one candidate per view (views without a candidate sit out) is
   triangulated (:func:`pipeline.cameras.triangulate`, confidence-weighted DLT) on the
   association keypoints seen with at least ``min_confidence``;
2. its error is the mean over keypoints of the mean over the used views of the
   reprojection error (pixels);
3. the first combination in candidate order (view by view, lowest index first, as
   Pose2Sim iterates) whose error is under ``max_error`` wins; when none is, one view is
   left out (every choice of it, the lowest error kept per combination), then two, ...,
   while at least ``min_views`` remain, and the first number of views left out that
   brings a combination under ``max_error`` wins. When none does, the smallest error
   found is kept.

A view left out of the winning combination gets index -1 for that frame: its detections
disagree with the other cameras (a wrong person, or a bad detection of the right one).

:func:`select_people` applies the choice to a multi-view dataset: one individual
(``person``) and the chosen index in ``person_index (time, view)`` (-1: none), the error
in ``association_error (time,)`` (pixels), the settings in ``attrs["association"]``.
:func:`follow_person_id` is the alternative for trackers that number people
(``person_id`` in the files): the detection with that id in every view.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import xarray as xr

from pipeline.cameras.camera import Camera
from pipeline.cameras.lens_projection import pack
from pipeline.cameras.triangulate import reprojection_error, triangulate
from pipeline.errors import CameraError, TracksError

__all__ = [
    "AssociationSettings",
    "associate_people",
    "follow_person_id",
    "select_people",
]

#: The individual a selected multi-view dataset keeps.
PERSON = "person"
#: The default association keypoint when tracked (Pose2Sim's ``tracked_keypoint``).
TRACKED = "Neck"


@dataclass(frozen=True)
class AssociationSettings:
    """How :func:`associate_people` matches people across views.

    Attributes
    ----------
    keypoints : tuple of str or None
        Keypoints triangulated to test a combination (default None: ``Neck`` when the
        tracks have it, Pose2Sim's ``tracked_keypoint``, else every keypoint).
    min_confidence : float
        Detections below this confidence are not used (default 0.3, Pose2Sim's
        ``likelihood_threshold_association``).
    max_error : float
        Reprojection error (pixels) under which a combination is accepted without leaving
        views out (default 20, Pose2Sim's ``reproj_error_threshold_association``).
    min_views : int
        Fewest views a combination keeps (default 2).
    """

    keypoints: tuple[str, ...] | None = None
    min_confidence: float = 0.3
    max_error: float = 20.0
    min_views: int = 2

    def __post_init__(self) -> None:
        if self.min_views < 2:
            raise CameraError(f"association min_views must be >= 2, got {self.min_views}")
        if not self.max_error > 0:
            raise CameraError(f"association max_error must be > 0 px, got {self.max_error}")


def _combination_errors(cams, pix: np.ndarray, conf: np.ndarray, combos: np.ndarray, s):
    """Errors (n,) of view-to-candidate ``combos (n, V)`` (-1: view out) for one frame.

    ``pix (V, 2, K, I)``, ``conf (V, K, I)``.
    """
    n_views = pix.shape[0]
    views = np.arange(n_views)
    idx = np.where(combos < 0, 0, combos)  # (n, V)
    xy = pix[views[None], :, :, idx]  # (n, V, 2, K)
    w = conf[views[None], :, idx]  # (n, V, K)
    w = np.where((combos[..., None] >= 0) & (w >= s.min_confidence), w, 0.0)
    xy = np.where(w[:, :, None] > 0, xy, np.nan)
    pixels = xy.transpose(0, 3, 1, 2)  # (n, K, V, 2)
    weights = w.transpose(0, 2, 1)  # (n, K, V)
    points = triangulate(cams, pixels, weights, min_views=2)  # (n, K, 3)
    err = reprojection_error(cams, points, pixels)  # (n, K, V)
    err = np.where(weights > 0, err, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows: NaN
        per_point = np.nanmean(err, axis=-1)  # (n, K)
        return np.nanmean(per_point, axis=-1)  # (n,)


def _candidates(present: np.ndarray) -> list[list[int]]:
    """Per view, the candidate indices (``[-1]`` when the view has none)."""
    return [list(np.flatnonzero(row)) or [-1] for row in present]


def _frame_choice(cams, pix, conf, present, s) -> tuple[np.ndarray, float]:
    """(index per view, error) of one frame."""
    n_views = pix.shape[0]
    combos = np.array(list(itertools.product(*_candidates(present))), dtype=np.int64)
    best: tuple[float, np.ndarray] | None = None
    for off in range(n_views - s.min_views + 1):
        drops = list(itertools.combinations(range(n_views), off))
        trial = np.repeat(combos[:, None], len(drops), axis=1)  # (combo, drop, V)
        for d, drop in enumerate(drops):
            trial[:, d, list(drop)] = -1
        usable = (trial >= 0).sum(axis=-1) >= s.min_views
        if not usable.any():
            break
        errors = np.full(usable.shape, np.nan)
        errors[usable] = _combination_errors(cams, pix, conf, trial[usable], s)
        if not np.isfinite(errors).any():
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            per_combo = np.nanmin(errors, axis=1)  # the best views of each combination
        under = np.flatnonzero(per_combo < s.max_error)
        if under.size:  # the first combination in candidate order, as Pose2Sim takes
            c = int(under[0])
            return trial[c, int(np.nanargmin(errors[c]))], float(per_combo[c])
        c = int(np.nanargmin(per_combo))
        if best is None or per_combo[c] < best[0]:
            best = (float(per_combo[c]), trial[c, int(np.nanargmin(errors[c]))])
    if best is None:  # nothing triangulates: keep each view's first candidate
        return np.array([c[0] for c in _candidates(present)]), float("nan")
    return best[1], best[0]


def associate_people(
    cameras: Sequence[Camera],
    position: np.ndarray,
    confidence: np.ndarray,
    keypoints: Sequence[str],
    settings: AssociationSettings | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The detection of each view that one person gives, per frame.

    Parameters
    ----------
    cameras : sequence of Camera
        The ``V`` cameras, in view order.
    position : (T, V, 2, K, I) array
        Candidate detections in pixels (NaN: missing), ``I`` candidates per view.
    confidence : (T, V, K, I) array
        Their confidences (NaN: unknown, counted as 1 where the pixel is finite).
    keypoints : sequence of str
        The ``K`` keypoint names.
    settings : AssociationSettings, optional

    Returns
    -------
    index : (T, V) int array
        The chosen candidate of each view and frame; -1 where the view has none or is
        left out.
    error : (T,) array
        The chosen combination's reprojection error (pixels); NaN where nothing
        triangulates.

    Raises
    ------
    TracksError
        An association keypoint the tracks do not have.
    """
    s = settings or AssociationSettings()
    names = list(map(str, keypoints))
    wanted = association_keypoints(s, names)
    if wanted is not None:
        unknown = [k for k in wanted if k not in names]
        if unknown:
            raise TracksError(
                f"association keypoints {unknown} are not tracked; keypoints: {', '.join(names)}"
            )
        sel = [names.index(k) for k in wanted]
    else:
        sel = list(range(len(names)))
    cams = pack(list(cameras))
    pos = np.asarray(position, np.float64)[:, :, :, sel]
    conf = np.asarray(confidence, np.float64)[:, :, sel]
    finite = np.isfinite(pos).all(axis=2)
    conf = np.where(finite, np.where(np.isnan(conf), 1.0, conf), 0.0)
    conf = np.where(conf >= s.min_confidence, conf, 0.0)
    present = (conf >= s.min_confidence).any(axis=2)  # (T, V, I): usable candidates
    n_frames, n_views = pos.shape[:2]
    index = np.full((n_frames, n_views), -1, dtype=np.int64)
    error = np.full(n_frames, np.nan)
    for t in range(n_frames):
        index[t], error[t] = _frame_choice(cams, pos[t], conf[t], present[t], s)
    chosen = present[np.arange(n_frames)[:, None], np.arange(n_views)[None], np.maximum(index, 0)]
    index[~chosen] = -1
    return index, error


def association_keypoints(settings: AssociationSettings, names: Sequence[str]):
    """The keypoints the association triangulates (None: every keypoint)."""
    if settings.keypoints is None and TRACKED in names:
        return (TRACKED,)
    return settings.keypoints


def _pick(ds: xr.Dataset, index: np.ndarray, attrs: dict) -> xr.Dataset:
    """``ds`` reduced to the chosen candidate per frame and view (NaN where -1)."""
    pos = ds["position"].transpose("time", "view", "space", "keypoint", "individual").values
    conf = ds["confidence"].transpose("time", "view", "keypoint", "individual").values
    t, v = np.meshgrid(np.arange(index.shape[0]), np.arange(index.shape[1]), indexing="ij")
    safe = np.maximum(index, 0)
    p = pos[t, v, :, :, safe]  # (T, V, 2, K)
    c = conf[t, v, :, safe]  # (T, V, K)
    p = np.where((index >= 0)[..., None, None], p, np.nan)
    c = np.where((index >= 0)[..., None], c, np.nan)
    out = ds.drop_vars(["position", "confidence"]).drop_dims("individual")
    out = out.assign_coords(individual=np.array([PERSON], dtype=object))
    out["position"] = (("time", "view", "space", "keypoint", "individual"), p[..., None])
    out["confidence"] = (("time", "view", "keypoint", "individual"), c[..., None])
    out["person_index"] = (("time", "view"), index.astype(np.int32))
    out["person_index"].attrs["description"] = (
        "the candidate (individual index of the reader's person<i>) chosen in each view "
        "and frame; -1: none"
    )
    out.attrs.update(individuals_associated=True, association=attrs)
    out.attrs.pop("individuals_note", None)
    return out


def select_people(ds: xr.Dataset, settings: AssociationSettings | None = None) -> xr.Dataset:
    """A multi-view dataset of unassociated candidates reduced to one matched person.

    Parameters
    ----------
    ds : xarray.Dataset
        Multi-view tracks (:mod:`pipeline.tracks.multiview`) whose individuals are
        per-frame candidates.
    settings : AssociationSettings, optional

    Returns
    -------
    xarray.Dataset
        One individual ``person``; ``person_index (time, view)`` the chosen candidate
        (-1: none), ``association_error (time,)`` pixels, ``attrs["association"]``.
    """
    from pipeline.tracks.multiview import session_cameras

    s = settings or AssociationSettings()
    index, error = associate_people(
        session_cameras(ds),
        ds["position"].transpose("time", "view", "space", "keypoint", "individual").values,
        ds["confidence"].transpose("time", "view", "keypoint", "individual").values,
        [str(k) for k in ds["keypoint"].values],
        s,
    )
    settings_attrs = asdict(s)
    used = association_keypoints(s, [str(k) for k in ds["keypoint"].values])
    settings_attrs["keypoints"] = list(used) if used else [str(k) for k in ds["keypoint"].values]
    out = _pick(ds, index, {"method": "reprojection", **settings_attrs})
    out["association_error"] = (("time",), error.astype(np.float32))
    out["association_error"].attrs["unit"] = "px"
    return out


def follow_person_id(ds: xr.Dataset, person_id: int) -> xr.Dataset:
    """A multi-view dataset reduced to the detections whose tracker id is ``person_id``.

    Parameters
    ----------
    ds : xarray.Dataset
        Multi-view candidates with ``person_id (time, view, individual)`` (-1: the file
        gave none).
    person_id : int

    Returns
    -------
    xarray.Dataset
        As :func:`select_people` (``attrs["association"]["method"] = "person_id"``).

    Raises
    ------
    TracksError
        The id never appears in some view (or the files record no ids); the message
        lists the ids each view has.
    """
    if "person_id" not in ds:
        raise TracksError(
            f"{ds.attrs.get('source_file', '<tracks>')}: person id {person_id}: these tracks "
            "record no person ids (only OpenPose-style JSON with person_id does)"
        )
    ids = ds["person_id"].transpose("time", "view", "individual").values
    views = [str(v) for v in ds["view"].values]
    files = list(ds.attrs.get("view_files") or views)
    missing = [i for i in range(len(views)) if not (ids[:, i] == person_id).any()]
    if missing:
        listing = "; ".join(
            f"{views[i]} ({files[i]}): "
            + (
                ", ".join(map(str, sorted({int(x) for x in np.unique(ids[:, i]) if x >= 0})))
                or "none (all -1)"
            )
            for i in range(len(views))
        )
        raise TracksError(
            f"person id {person_id} never appears in view(s) "
            f"{', '.join(views[i] for i in missing)}; person ids per view: {listing}"
        )
    hit = ids == person_id
    index = np.where(hit.any(axis=2), hit.argmax(axis=2), -1)
    out = _pick(ds.drop_vars("person_id"), index, {"method": "person_id", "person_id": person_id})
    return out
