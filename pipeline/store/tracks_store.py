"""The tracks store: one zarr v3 store per session, chunked along ``time`` only."""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from pipeline.store.atomic import building
from pipeline.tracks.schema import CONFIDENCE_DIMS, DIMS, TracksError, validate_tracks

#: Default frames per zarr chunk of a tracks store.
DEFAULT_CHUNK_FRAMES = 4096


def write_tracks(
    ds: xr.Dataset,
    path: str | Path,
    chunk_frames: int = DEFAULT_CHUNK_FRAMES,
    *,
    overwrite: bool = False,
) -> Path:
    """Write a tracks dataset as a zarr v3 store, atomically.

    The dataset is validated first; the store is written under a temporary name beside
    ``path`` and renamed when complete, so ``path`` never holds a half-written store.

    Parameters
    ----------
    ds : xarray.Dataset
        Tracks in the movement poses schema (numpy- or dask-backed).
    path : str or Path
        Destination ``.zarr`` directory.
    chunk_frames : int
        Frames per zarr chunk (the ``time`` chunk size); other dims are one chunk.
    overwrite : bool
        Replace an existing store at ``path`` (only once the new one is complete).

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    TracksError
        The dataset breaks the contract (nothing is written).
    FileExistsError
        ``path`` exists and ``overwrite`` is false.
    """
    path = Path(path)
    if chunk_frames < 1:
        raise ValueError(f"chunk_frames must be >= 1, got {chunk_frames}")
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path}: already exists; pass overwrite=True to replace it")
    ds = validate_tracks(ds, source=str(path))
    ds = ds.copy()
    for name in ds.variables:
        ds[name].encoding = {}
    if any(ds[v].chunks for v in ("position", "confidence")):
        ds = ds.chunk({"time": chunk_frames, "space": -1, "keypoint": -1, "individual": -1})
    n = min(chunk_frames, ds.sizes["time"])
    encoding = {
        "position": {"chunks": (n,) + tuple(ds.sizes[d] for d in DIMS[1:])},
        "confidence": {"chunks": (n,) + tuple(ds.sizes[d] for d in CONFIDENCE_DIMS[1:])},
    }
    with building(path) as tmp:
        ds.to_zarr(tmp, mode="w", consolidated=False, zarr_format=3, encoding=encoding)
    return path


def open_tracks(path: str | Path) -> xr.Dataset:
    """Open a tracks store lazily and validate it.

    Parameters
    ----------
    path : str or Path
        A zarr store written by :func:`write_tracks` (or by movement).

    Returns
    -------
    xarray.Dataset
        Dask-backed, chunked like the store.

    Raises
    ------
    FileNotFoundError
        No store at ``path``.
    TracksError
        The store breaks the contract; every problem is listed.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such tracks store")
    try:
        ds = xr.open_zarr(path, consolidated=False)
    except Exception as exc:
        raise TracksError(f"{path}: not a readable zarr store ({exc})") from exc
    return validate_tracks(ds, source=str(path))
