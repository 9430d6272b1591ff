"""Reader for NumPy ``.npz`` archives of named keypoints.

Layout (keys of the archive; frames first, coordinates last):

``position`` (required)
    ``(n_frames, n_keypoints, n_space)`` for one individual or
    ``(n_frames, n_individuals, n_keypoints, n_space)``; NaN = missing; ``n_space`` 2 or 3.
``keypoints`` (required)
    ``(n_keypoints,)`` strings.
``confidence`` (optional)
    ``(n_frames, n_keypoints)`` or ``(n_frames, n_individuals, n_keypoints)``.
``individuals`` (optional)
    ``(n_individuals,)`` strings.
``time`` (optional)
    ``(n_frames,)`` seconds.
``fps``, ``unit``, ``up_axis``, ``session``, ``source_software`` (optional)
    Scalars (0-d arrays).
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from pipeline.tracks.schema import TracksError, make_tracks_dataset

FORMAT = "npz"
SUFFIXES: tuple[str, ...] = (".npz",)
KEYS: tuple[str, ...] = (
    "position",
    "keypoints",
    "confidence",
    "individuals",
    "time",
    "fps",
    "unit",
    "up_axis",
    "session",
    "source_software",
)


def sniff(path: str | Path) -> bool:
    """Return True if ``path`` is a zip archive holding ``position`` and ``keypoints``."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
    except (OSError, zipfile.BadZipFile):
        return False
    return {"position.npy", "keypoints.npy"} <= names


def _scalar(data: Any, key: str) -> Any:
    if key not in data:
        return None
    value = np.asarray(data[key])
    return value.item() if value.ndim == 0 else value.tolist()


def read(path: str | Path, *, fps: float | None = None) -> xr.Dataset:
    """Read an ``.npz`` archive laid out as in the module docstring.

    Parameters
    ----------
    path : str or Path
        The archive.
    fps : float, optional
        Frames per second when the archive has no ``fps`` (the archive's wins).

    Returns
    -------
    xarray.Dataset
    """
    path = Path(path)
    try:
        archive = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise TracksError(f"{path}: not a readable .npz archive (truncated? {exc})") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise TracksError(f"{path}: a single .npy array, not an .npz archive of named arrays")
    with archive as data:
        unknown = sorted(set(data.files) - set(KEYS))
        if unknown:
            raise TracksError(f"{path}: unknown arrays {unknown}; valid keys: {list(KEYS)}")
        missing = [k for k in ("position", "keypoints") if k not in data.files]
        if missing:
            raise TracksError(
                f"{path}: missing arrays {missing}; an npz tracks archive holds {list(KEYS)}"
            )
        position = np.asarray(data["position"], dtype=np.float32)
        keypoints = [str(k) for k in data["keypoints"].tolist()]
        confidence = np.asarray(data["confidence"]) if "confidence" in data.files else None
        individuals = data["individuals"].tolist() if "individuals" in data.files else None
        time = np.asarray(data["time"]) if "time" in data.files else None
        attrs = {k: _scalar(data, k) for k in ("fps", "unit", "up_axis", "session")}
        software = _scalar(data, "source_software") or "numpy"
    if position.ndim == 3:
        position = position[:, np.newaxis]
        confidence = None if confidence is None else confidence[:, np.newaxis]
    if position.ndim != 4 or position.shape[-1] not in (2, 3):
        raise TracksError(
            f"{path}: position: expected (n_frames, [n_individuals,] n_keypoints, 2|3), "
            f"got shape {position.shape}"
        )
    if position.shape[2] != len(keypoints):
        raise TracksError(
            f"{path}: keypoints: {len(keypoints)} names for {position.shape[2]} keypoints "
            f"in position {position.shape}"
        )
    if confidence is not None and confidence.shape != position.shape[:3]:
        raise TracksError(
            f"{path}: confidence: expected shape {position.shape[:3]} (frames, [individuals,] "
            f"keypoints), got {confidence.shape}"
        )
    space = ("x", "y", "z")[: position.shape[-1]]
    return make_tracks_dataset(
        position.transpose(0, 3, 2, 1),
        None if confidence is None else confidence.transpose(0, 2, 1),
        keypoints=keypoints,
        individuals=individuals,
        fps=attrs["fps"] if attrs["fps"] is not None else fps,
        time=time,
        space=space,
        source_software=software,
        source_file=path,
        unit=attrs["unit"],
        up_axis=attrs["up_axis"],
        session=attrs["session"],
    )
