"""The fit store: layout, creation up front, opening (writing: :mod:`.fit_chunks`).

Layout (the fit store's data contract, names exact)::

    root_position     (time, individual, space)          float64  length units
    root_orientation  (time, individual, quat)           float64  w, x, y, z
    joint_rotation    (time, individual, joint, quat)    float32  local to the rest frame
    dof_value         (time, individual, dof)            float64  rad / length units
    fitted_position   (time, space, keypoint, individual) float32 movement schema
    residual          (time, individual, keypoint)       float32  NaN where unobserved
    rms_error         (time, individual)                 float32
    max_error         (time, individual)                 float32
    iterations        (time, individual)                 int32    fill -1 (never written)
    converged         (time, individual)                 bool
    stop_reason       (time, individual)                 int8     0 converged, 1 max_iterations,
                                                                  2 stalled, 3 no_observations;
                                                                  fill -1 (never written)
    objective         (time, individual)                 float32  the solver's objective
    limit_active      (time, individual, dof)            bool
    seam_dof_value    (seam, overlap, individual, dof)   float64  a chunk's warm-up solve
    seam_disagreement (seam, individual)                 float32  max |seam_dof_value -
                                                                  dof_value| at the seam
    reprojection_error (time, view, keypoint, individual) float32 pixels; multi-view and
                                                                  image-plane fits only
    dof_std           (time, individual, dof)            float32  posterior (temporal smooth)
                                                                  or per-frame standard deviation
    dof_velocity      (time, individual, dof)            float32  per s; NaN unless smoothed
    dof_acceleration  (time, individual, dof)            float32  per s^2; NaN unless smoothed
    dof_observable    (time, individual, dof)            bool     keypoints constrain the DOF
    root_position_std, root_orientation_std (time, individual, space) float32 length / rad
    root_velocity, root_acceleration (time, individual, space) float32 length per s, per s^2
    root_angular_velocity, root_angular_acceleration (time, individual, space) float32
                                                                  world frame, rad/s, rad/s^2

``residual``, ``rms_error`` and ``max_error`` are in the unit the attr ``residual_unit``
names (:func:`pipeline.store.attrs.residual_unit`): pixels for a fit that compares pixels
(the image plane, whatever its ``image_scale``, and cameras fitted directly), else the
length unit; ``fitted_position`` is always in the length unit (attr ``unit``).

Positions and rotations are in the body plan's frame; attrs ``world_rotation`` (3 x 3,
tracks -> plan, :mod:`pipeline.fit.world_frame`), ``tracks_up_axis``, ``plan_up_axis``
and ``up_axis`` (the frame's) say how it relates to the tracks'. Exports write it (``.trc``
and ``.mot``: OpenSim's Y up for an OpenSim plan; CSV, movement, NWB: with ``up_axis``).

``seam`` has one entry per time chunk (the seam at the chunk's first frame; entry 0 is
NaN); ``overlap`` indexes the ``overlap_frames`` frames before the seam. Time variables
are chunked ``chunk_frames`` along ``time`` only; every region write covers exactly one
chunk. Bookkeeping lives in the zarr subgroup ``_kinefit`` (``done (chunk,)`` int8,
``seconds (chunk, 4)`` read/solve/write/total, and ``tail`` for the seam summary, see
:mod:`pipeline.store.seams`), which xarray does not open.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np
import xarray as xr
import zarr

from pipeline.errors import FitStoreError
from pipeline.store.attrs import store_attrs
from pipeline.store.seams import create_tail
from pipeline.tracks.schema import TracksError, validate_tracks

#: 2: per-frame ``stop_reason`` and ``objective``; multi-view and image-plane fits add
#: ``reprojection_error`` and the ``view`` coord. 3: uncertainties, observability and
#: the motion model's velocities and accelerations (:mod:`pipeline.solve.temporal`).
SCHEMA_VERSION = 3
#: Schema versions :func:`open_fit` reads (older stores still open).
READABLE_SCHEMA_VERSIONS = (1, 2, 3)
MARKERS = "_kinefit"
TIMING_FIELDS: tuple[str, ...] = ("read_s", "solve_s", "write_s", "total_s")

#: name -> (dims, dtype, fill value, attrs)
VARIABLES: dict[str, tuple[tuple[str, ...], str, Any, dict[str, str]]] = {
    "root_position": (("time", "individual", "space"), "float64", np.nan, {"units": "length"}),
    "root_orientation": (("time", "individual", "quat"), "float64", np.nan, {"order": "wxyz"}),
    "joint_rotation": (
        ("time", "individual", "joint", "quat"),
        "float32",
        np.nan,
        {"order": "wxyz", "frame": "local to the joint's rest frame"},
    ),
    "dof_value": (("time", "individual", "dof"), "float64", np.nan, {"units": "rad or length"}),
    "fitted_position": (
        ("time", "space", "keypoint", "individual"),
        "float32",
        np.nan,
        {"units": "length"},
    ),
    "residual": (("time", "individual", "keypoint"), "float32", np.nan, {"units": "length"}),
    "rms_error": (("time", "individual"), "float32", np.nan, {"units": "length"}),
    "max_error": (("time", "individual"), "float32", np.nan, {"units": "length"}),
    "iterations": (("time", "individual"), "int32", -1, {"missing": "-1"}),
    "converged": (("time", "individual"), "bool", False, {}),
    "stop_reason": (
        ("time", "individual"),
        "int8",
        -1,
        {
            "codes": "0 converged, 1 max_iterations, 2 stalled, 3 no_observations",
            "missing": "-1",
        },
    ),
    "objective": (("time", "individual"), "float32", np.nan, {"units": "observation unit^2"}),
    "limit_active": (("time", "individual", "dof"), "bool", False, {}),
    "dof_std": (
        ("time", "individual", "dof"),
        "float32",
        np.nan,
        {"units": "rad or length", "meaning": "standard deviation (pipeline.solve.temporal)"},
    ),
    "dof_velocity": (("time", "individual", "dof"), "float32", np.nan, {"units": "per s"}),
    "dof_acceleration": (
        ("time", "individual", "dof"),
        "float32",
        np.nan,
        {"units": "per s^2"},
    ),
    "dof_observable": (("time", "individual", "dof"), "bool", False, {}),
    "root_position_std": (("time", "individual", "space"), "float32", np.nan, {"units": "length"}),
    "root_orientation_std": (
        ("time", "individual", "space"),
        "float32",
        np.nan,
        {"units": "rad", "frame": "world-frame rotation increment"},
    ),
    "root_velocity": (("time", "individual", "space"), "float32", np.nan, {"units": "length/s"}),
    "root_angular_velocity": (
        ("time", "individual", "space"),
        "float32",
        np.nan,
        {"units": "rad/s", "frame": "world"},
    ),
    "root_acceleration": (
        ("time", "individual", "space"),
        "float32",
        np.nan,
        {"units": "length/s^2"},
    ),
    "root_angular_acceleration": (
        ("time", "individual", "space"),
        "float32",
        np.nan,
        {"units": "rad/s^2", "frame": "world"},
    ),
    "seam_dof_value": (
        ("seam", "overlap", "individual", "dof"),
        "float64",
        np.nan,
        {"meaning": "the chunk's warm-up solve of the overlap frames before its seam"},
    ),
    "seam_disagreement": (
        ("seam", "individual"),
        "float32",
        np.nan,
        {"meaning": "max |seam_dof_value - dof_value| over the overlap frames and DOFs"},
    ),
}
#: Variables of 2D fits only (a fit store has them when its layout has views).
VIEW_VARIABLES: dict[str, tuple[tuple[str, ...], str, Any, dict[str, str]]] = {
    "reprojection_error": (
        ("time", "view", "keypoint", "individual"),
        "float32",
        np.nan,
        {"units": "px", "meaning": "pixel distance of the fitted keypoint to the detection"},
    ),
}
#: Warm-up frames solved before each chunk (``FitLayout.overlap_frames``) by default.
DEFAULT_OVERLAP_FRAMES = 16
TIME_VARIABLES = tuple(n for n, v in VARIABLES.items() if v[0][0] == "time")


@dataclass(frozen=True)
class FitLayout:
    """Shape of a fit store: coordinates and time chunking.

    Attributes
    ----------
    time : ndarray, shape (n_frames,)
        Time coordinate of the tracks (seconds, or frames).
    individuals, joints, dofs : tuple of str
        Coordinate names; ``keypoint`` equals ``joint`` (every joint is a keypoint).
    chunk_frames : int
        Frames per time chunk, and per task.
    overlap_frames : int
        Warm-up frames each chunk solves before its first frame.
    views : tuple of str
        Camera views of a 2D fit (``("image",)`` for an image-plane fit); empty for 3D.
        With views the store has :data:`VIEW_VARIABLES` too.
    """

    time: np.ndarray
    individuals: tuple[str, ...]
    joints: tuple[str, ...]
    dofs: tuple[str, ...]
    chunk_frames: int
    overlap_frames: int
    views: tuple[str, ...] = ()

    def variables(self) -> dict[str, tuple[tuple[str, ...], str, Any, dict[str, str]]]:
        """The store's variables: :data:`VARIABLES`, plus :data:`VIEW_VARIABLES` with views."""
        return {**VARIABLES, **(VIEW_VARIABLES if self.views else {})}

    @property
    def n_frames(self) -> int:
        """Number of frames."""
        return int(self.time.size)

    @property
    def n_chunks(self) -> int:
        """Number of time chunks (= tasks)."""
        return -(-self.n_frames // self.chunk_frames)

    def bounds(self, k: int) -> tuple[int, int]:
        """Frames ``[start, stop)`` of chunk ``k``."""
        start = k * self.chunk_frames
        return start, min(start + self.chunk_frames, self.n_frames)

    def sizes(self) -> dict[str, int]:
        """Length of every dim."""
        return {
            "time": self.n_frames,
            "individual": len(self.individuals),
            "space": 3,
            "quat": 4,
            "joint": len(self.joints),
            "keypoint": len(self.joints),
            "dof": len(self.dofs),
            "seam": self.n_chunks,
            "overlap": max(self.overlap_frames, 1),
            "view": len(self.views),
        }


def _names(values) -> np.ndarray:
    return np.array([str(v) for v in values], dtype=object)


#: lz4 at level 1 with byte shuffle. Fitted floats barely compress (ratio 1.0-1.3; the
#: bool and integer diagnostics 3-200x), so the codec is chosen for speed: about 5 ms per
#: 8192-frame fly chunk, where zstd took 20 and lz4 at level 5 took 10.
_COMPRESSORS = (zarr.codecs.BloscCodec(cname="lz4", clevel=1, shuffle="shuffle"),)


def _template(layout: FitLayout, attrs: Mapping[str, Any]) -> tuple[xr.Dataset, dict]:
    sizes = layout.sizes()
    data, encoding = {}, {}
    for name, (dims, dtype, fill, var_attrs) in layout.variables().items():
        shape = tuple(sizes[d] for d in dims)
        # one dask chunk per variable: the template is never computed (metadata only), and
        # a graph of one task per store chunk took longer to build than the store
        data[name] = xr.Variable(dims, da.full(shape, fill, dtype=dtype, chunks=-1), var_attrs)
        enc_chunks = tuple(
            min(layout.chunk_frames, s) if d == "time" else 1 if d == "seam" else s
            for d, s in zip(dims, shape, strict=True)
        )
        encoding[name] = {"chunks": enc_chunks, "fill_value": fill, "compressors": _COMPRESSORS}
    start = np.arange(layout.n_chunks) * layout.chunk_frames
    coords = {
        "time": layout.time,
        "individual": _names(layout.individuals),
        "space": _names("xyz"),
        "quat": _names("wxyz"),
        "joint": _names(layout.joints),
        "keypoint": _names(layout.joints),
        "dof": _names(layout.dofs),
        "seam": start,
        "overlap": np.arange(-sizes["overlap"], 0),
        **({"view": _names(layout.views)} if layout.views else {}),
    }
    return xr.Dataset(data, coords=coords, attrs=dict(attrs)), encoding


def create_fit_store(path: str | Path, layout: FitLayout, attrs: Mapping[str, Any]) -> Path:
    """Create an empty fit store: metadata, coords and chunk markers, no data.

    The attr ``created`` is set last, so a store interrupted while being created can be
    told apart from one to resume.

    Parameters
    ----------
    path : str or Path
        New store directory (replaced if it exists).
    layout : FitLayout
    attrs : mapping
        JSON-serializable provenance attrs.

    Returns
    -------
    Path
    """
    path = Path(path)
    ds, encoding = _template(layout, {**attrs, "schema_version": SCHEMA_VERSION})
    ds.to_zarr(path, mode="w", compute=False, consolidated=False, zarr_format=3, encoding=encoding)
    group = zarr.open_group(path, mode="r+", zarr_format=3).create_group(MARKERS)
    group.create_array("done", shape=(layout.n_chunks,), chunks=(1,), dtype="int8", fill_value=0)
    create_tail(
        group, layout.n_chunks, layout.overlap_frames, (len(layout.individuals), len(layout.dofs))
    )
    group.create_array(
        "seconds",
        shape=(layout.n_chunks, len(TIMING_FIELDS)),
        chunks=(1, len(TIMING_FIELDS)),
        dtype="float64",
        fill_value=np.nan,
    )
    # written last: a store without it was interrupted while being created
    zarr.open_group(path, mode="r+", zarr_format=3).attrs["created"] = True
    return path


def layout_intact(path: str | Path) -> bool:
    """True if every variable and chunk marker array of a fit store exists."""
    try:
        group = zarr.open_group(path, mode="r", zarr_format=3)
        markers = group[MARKERS]
        return set(VARIABLES) <= set(group.array_keys()) and {"done", "seconds"} <= set(
            markers.array_keys()
        )
    except Exception:  # noqa: BLE001 - any unreadable store is not intact
        return False


def open_fit(path: str | Path) -> xr.Dataset:
    """Open a complete fit store lazily.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    xarray.Dataset
        Dask-backed; name coords as object-dtype strings.

    Raises
    ------
    FileNotFoundError
        No store at ``path``.
    FitStoreError
        Not a kinefit fit store, or not complete.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such fit store")
    attrs = store_attrs(path)
    if attrs.get("schema_version") not in READABLE_SCHEMA_VERSIONS or "fingerprint" not in attrs:
        raise FitStoreError(
            f"{path}: not a kinefit fit store (schema_version {attrs.get('schema_version')!r}, "
            f"expected one of {READABLE_SCHEMA_VERSIONS})"
        )
    if not attrs.get("complete"):
        raise FitStoreError(f"{path}: the fit store is incomplete; rerun the fit to finish it")
    ds = xr.open_zarr(path, consolidated=False)
    names = ("individual", "space", "quat", "joint", "keypoint", "dof", "view")
    return ds.assign_coords({n: _names(ds[n].values.tolist()) for n in names if n in ds.coords})


def fitted_poses(fit: xr.Dataset) -> xr.Dataset:
    """Return the fitted keypoints as a movement poses dataset (NaN ``confidence``).

    Parameters
    ----------
    fit : xarray.Dataset
        From :func:`open_fit`.

    Returns
    -------
    xarray.Dataset
        Validated against the tracks contract; lazy when ``fit`` is.
    """
    position = fit["fitted_position"]
    confidence = xr.full_like(position.isel(space=0, drop=True), np.nan)
    ds = xr.Dataset(
        {"position": position, "confidence": confidence},
        attrs={
            "source_software": f"kinefit {fit.attrs.get('kinefit_version', '')}".strip(),
            "ds_type": "poses",
            "fps": fit.attrs.get("fps"),
            "time_unit": fit.attrs.get("time_unit"),
            "source_file": fit.attrs.get("tracks_store"),
            "session": fit.attrs.get("session"),
            "unit": fit.attrs.get("unit"),
            "up_axis": fit.attrs.get("up_axis"),
        },
    )
    keep = [c for c in ds.coords if c in ("time", "space", "keypoint", "individual")]
    ds = ds.drop_vars([c for c in ds.coords if c not in keep])
    try:
        return validate_tracks(ds, source="fitted_position")
    except TracksError as exc:  # pragma: no cover - the layout guarantees the schema
        raise FitStoreError(str(exc)) from exc
