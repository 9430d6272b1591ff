"""SLEAP analysis HDF5 files (``*.analysis.h5``, "Export Analysis HDF5").

Datasets read (h5py; names are byte or variable-length strings):

- ``tracks``: SLEAP writes it for MATLAB (column-major), so in Python it reads as
  ``(n_tracks, 2, n_nodes, n_frames)``; sleap-io's ``standard`` preset writes
  ``(n_frames, n_tracks, n_nodes, 2)`` and records the order in the ``dims`` attribute
  (``["track", "xy", "node", "frame"]`` style), which is honoured when present. Files of
  old SLEAP versions written without the transpose, ``(n_frames, n_nodes, 2, n_tracks)``,
  are recognized by their shape.
- ``point_scores`` (``(n_tracks, n_nodes, n_frames)`` in the MATLAB layout) becomes
  ``confidence``; without it confidence is NaN.
- ``node_names`` are the keypoints; ``track_names`` the individuals (an empty list means
  one untracked individual).

Attrs: coordinates are image pixels with y pointing down, so ``unit`` is ``"px"`` and
``up_axis`` ``"-y"``. The file has no frame rate (only ``video_path``): ``fps=`` is
required.

Why h5py and not sleap-io (which reads ``.slp`` files, :mod:`.slp`): sleap-io 0.9's
``load_analysis_h5`` agrees on the analysis files it reads, but fails on files without
``point_scores`` (SLEAP's own docs example ``predictions.analysis.h5``), and these files
need only h5py, a core dependency.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import xarray as xr

from pipeline.tracks.readers.reader_helpers import decode_names, fail, is_hdf5, resolve_fps
from pipeline.tracks.schema import make_tracks_dataset

FORMAT = "sleap"
SUFFIXES = (".h5", ".hdf5")
SOFTWARE = "SLEAP"
#: Our axis order for ``tracks`` and ``point_scores``.
TRACKS_DIMS = ("frame", "xy", "node", "track")
SCORES_DIMS = ("frame", "node", "track")
MATLAB_TRACKS = ("track", "xy", "node", "frame")
MATLAB_SCORES = ("track", "node", "frame")
OLD_TRACKS = ("frame", "node", "xy", "track")
OLD_SCORES = ("frame", "node", "track")


def _dims_attr(dataset) -> tuple[str, ...] | None:
    raw = dataset.attrs.get("dims")
    if raw is None:
        return None
    if isinstance(raw, bytes | np.bytes_):
        raw = raw.decode()
    if isinstance(raw, str):
        raw = json.loads(raw)
    return tuple(str(d) for d in raw)


def _tracks_layout(path: Path, shape: tuple[int, ...], dims, n_nodes: int, n_tracks) -> tuple:
    if dims is not None:
        if sorted(dims) != sorted(TRACKS_DIMS):
            raise fail(
                path,
                f"tracks: dims attribute {list(dims)} is not a permutation of {list(TRACKS_DIMS)}",
            )
        return dims
    if len(shape) != 4:
        raise fail(path, f"tracks: expected 4 dims (n_tracks, 2, n_nodes, n_frames), got {shape}")

    def fits(layout):
        size = dict(zip(layout, shape, strict=True))
        return (
            size["xy"] == 2
            and size["node"] == n_nodes
            and (n_tracks is None or size["track"] == n_tracks)
        )

    for layout in (MATLAB_TRACKS, OLD_TRACKS):
        if fits(layout):
            return layout
    raise fail(
        path,
        f"tracks: shape {shape} does not fit (n_tracks, 2, n_nodes, n_frames) with "
        f"{n_nodes} node_names" + (f" and {n_tracks} track_names" if n_tracks else ""),
    )


def parse(path: str | Path) -> dict:
    """Read a SLEAP analysis file into arrays.

    Returns
    -------
    dict
        ``position (n_frames, 2, n_nodes, n_tracks)``, ``confidence (n_frames, n_nodes,
        n_tracks)`` or None, ``keypoints``, ``individuals`` (None when untracked).
    """
    import h5py

    path = Path(path)
    try:
        with h5py.File(path, "r") as handle:
            missing = [k for k in ("tracks", "node_names") if k not in handle]
            if missing:
                raise fail(
                    path,
                    f"not a SLEAP analysis file: no dataset(s) {missing}; its datasets: "
                    f"{sorted(handle)}",
                )
            keypoints = decode_names(handle["node_names"][()])
            individuals = decode_names(handle["track_names"][()]) if "track_names" in handle else []
            n_tracks = len(individuals) or None
            tracks_ds = handle["tracks"]
            layout = _tracks_layout(
                path, tracks_ds.shape, _dims_attr(tracks_ds), len(keypoints), n_tracks
            )
            tracks = np.asarray(tracks_ds[()], dtype=np.float64)
            scores = None
            if "point_scores" in handle:
                scores_ds = handle["point_scores"]
                scores_dims = _dims_attr(scores_ds) or (
                    MATLAB_SCORES
                    if layout == MATLAB_TRACKS
                    else OLD_SCORES
                    if layout == OLD_TRACKS
                    else tuple(d for d in layout if d != "xy")
                )
                scores = np.asarray(scores_ds[()], dtype=np.float64)
                if sorted(scores_dims) != sorted(SCORES_DIMS) or scores.ndim != 3:
                    raise fail(path, f"point_scores: unexpected dims {list(scores_dims)}")
                scores = scores.transpose([scores_dims.index(d) for d in SCORES_DIMS])
    except OSError as err:
        raise fail(path, f"not a readable HDF5 file (truncated or corrupt?): {err}") from None
    position = tracks.transpose([layout.index(d) for d in TRACKS_DIMS])
    n_frames, _, n_nodes, n_tr = position.shape
    if n_nodes != len(keypoints):
        raise fail(path, f"tracks has {n_nodes} nodes but node_names has {len(keypoints)}")
    if individuals and n_tr != len(individuals):
        raise fail(path, f"tracks has {n_tr} tracks but track_names has {len(individuals)}")
    if not individuals and n_tr != 1:
        raise fail(path, f"tracks has {n_tr} tracks but track_names is empty")
    if scores is not None and scores.shape != (n_frames, n_nodes, n_tr):
        raise fail(
            path,
            f"point_scores has shape {scores.shape} (as frame, node, track), tracks gives "
            f"{(n_frames, n_nodes, n_tr)}",
        )
    return {
        "position": position,
        "confidence": scores,
        "keypoints": keypoints,
        "individuals": individuals or None,
    }


def sniff(path: str | Path) -> bool:
    """Return True for an HDF5 file with ``tracks`` and ``node_names`` datasets."""
    if not is_hdf5(path):
        return False
    import h5py

    try:
        with h5py.File(path, "r") as handle:
            return "tracks" in handle and "node_names" in handle
    except OSError:
        return False


def read(path: str | Path, *, fps: float | None = None) -> xr.Dataset:
    """Read a SLEAP analysis HDF5 file.

    Parameters
    ----------
    path : str or Path
        The ``.h5`` file.
    fps : float
        Frames per second (not in the file): required.

    Returns
    -------
    xarray.Dataset
        ``position (time, space=[x, y], keypoint, individual)`` in pixels (up axis
        ``"-y"``), one individual per track, ``confidence`` from ``point_scores``,
        ``time`` in seconds.

    Raises
    ------
    TracksError
        Not HDF5 or truncated, missing datasets, shapes that disagree with the names,
        no ``fps``.
    """
    path = Path(path)
    if not is_hdf5(path):
        raise fail(path, "not an HDF5 file (a SLEAP analysis file is HDF5)")
    arrays = parse(path)
    rate = resolve_fps(path, SOFTWARE, None, fps)
    return make_tracks_dataset(
        arrays["position"],
        arrays["confidence"],
        keypoints=arrays["keypoints"],
        individuals=arrays["individuals"],
        fps=rate,
        space=("x", "y"),
        source_software=SOFTWARE,
        source_file=path,
        unit="px",
        up_axis="-y",
        extra_attrs={"source_format": FORMAT},
    )
