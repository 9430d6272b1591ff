"""The tracks store: one zarr v3 store per session, chunked along ``time`` only."""

from __future__ import annotations

import base64
import binascii
from pathlib import Path

import numpy as np
import xarray as xr
import zarr

from pipeline.errors import ConfigError, flag
from pipeline.store.atomic import building
from pipeline.tracks.multiview import is_multiview, validate_multiview
from pipeline.tracks.schema import PLURAL_DIMS, TracksError, validate_tracks

#: Default frames per zarr chunk of a tracks store.
DEFAULT_CHUNK_FRAMES = 4096
#: lz4 with byte shuffle: decompresses several times faster than zstd at a similar ratio
#: (tracks are read by every fit; new stores only, existing ones read as they are).
COMPRESSORS = (zarr.codecs.BloscCodec(cname="lz4", clevel=5, shuffle="shuffle"),)


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
        Tracks in the movement poses schema, or multi-view tracks
        (:mod:`pipeline.tracks.multiview`), numpy- or dask-backed.
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
        raise ConfigError(f"chunk_frames must be >= 1, got {chunk_frames}")
    if path.exists() and not overwrite:
        raise FileExistsError(
            f"{path}: already exists; pass {flag('overwrite', python='overwrite=True')} "
            "to replace it"
        )
    ds = _validate(ds, str(path))
    ds = ds.copy()
    for name in ds.variables:
        ds[name].encoding = {}
    if any(ds[v].chunks for v in ("position", "confidence")):
        ds = ds.chunk({d: chunk_frames if d == "time" else -1 for d in ds["position"].dims})
    n = min(chunk_frames, ds.sizes["time"])
    encoding = {
        name: {
            "chunks": (n,) + tuple(ds.sizes[d] for d in ds[name].dims[1:]),
            "compressors": COMPRESSORS,
        }
        for name in ("position", "confidence")
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
    if path.is_file() and path.suffix != ".zarr":
        store = path.with_suffix(".zarr").name
        raise TracksError(
            f"{path}: a tracks file, not a tracks store; read it into one first: "
            f"kinefit ingest {path} -o {store}"
        )
    try:
        ds = xr.open_zarr(path, consolidated=False)
    except Exception as exc:
        raise TracksError(f"{path}: not a readable zarr store ({exc})") from exc
    return _validate(ds, str(path))


def _validate(ds: xr.Dataset, source: str) -> xr.Dataset:
    """The tracks contract, or the multi-view one for a dataset with a ``view`` dim."""
    return validate_multiview(ds, source) if is_multiview(ds) else validate_tracks(ds, source)


def read_frames(
    path: str | Path, name: str, dims: tuple[str, ...], start: int, stop: int
) -> np.ndarray:
    """Frames ``[start, stop)`` of one variable of a tracks store, as float32 in ``dims`` order.

    Reads the zarr array directly: the chunk tasks and the input scan call this once per
    block, and opening the store with xarray would decode every coordinate (the whole
    ``time`` axis) each time.

    Parameters
    ----------
    path : str or Path
        Tracks store.
    name : str
        ``position`` or ``confidence``.
    dims : tuple of str
        Wanted dimension order (``time`` first); movement's plural names are accepted in
        the store.
    start, stop : int
        Frame range.

    Returns
    -------
    ndarray, float32, C-contiguous

    Raises
    ------
    TracksError
        The variable or one of its chunks cannot be read (corrupt or truncated store).
    """
    try:
        array = zarr.open_array(Path(path) / name, mode="r")
        if _cf_encoded(array.attrs):  # packed or sentinel-masked: let xarray decode it
            with xr.open_zarr(path, consolidated=False, chunks=None) as ds:
                ds = ds.rename({k: v for k, v in PLURAL_DIMS.items() if k in ds.dims})
                values = ds[name].isel(time=slice(start, stop)).transpose(*dims).values
            return np.ascontiguousarray(values, dtype=np.float32)
        stored = [PLURAL_DIMS.get(d, d) for d in array.metadata.dimension_names]
        region = [slice(None)] * len(stored)
        region[stored.index("time")] = slice(start, stop)
        values = array[tuple(region)]
        order = [stored.index(d) for d in dims]
    except Exception as exc:  # noqa: BLE001 - codec and I/O errors of any kind
        raise TracksError(
            f"{path}: field {name!r}: cannot read the stored data (corrupt or truncated "
            f"chunk?): {type(exc).__name__}: {exc}"
        ) from exc
    return np.ascontiguousarray(np.transpose(values, order), dtype=np.float32)


def _cf_encoded(attrs) -> bool:
    """The array's values need CF decoding (scale/offset, or a non-NaN missing marker).

    xarray stores a float ``_FillValue`` in zarr v3 attrs as base64 of its bytes; NaN
    there is what a NaN-missing float array already reads as.
    """
    if "scale_factor" in attrs or "add_offset" in attrs:
        return True
    for key in ("_FillValue", "missing_value"):
        value = attrs.get(key)
        if value is None:
            continue
        if isinstance(value, str):
            try:
                raw = base64.b64decode(value, validate=True)
                value = np.frombuffer(raw, {8: np.float64, 4: np.float32}[len(raw)])[0]
            except (ValueError, KeyError, binascii.Error):
                return True
        if not (isinstance(value, float | np.floating) and np.isnan(value)):
            return True
    return False
