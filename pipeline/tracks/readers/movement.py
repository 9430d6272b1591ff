"""Reader for movement's own poses datasets saved as netCDF or zarr.

Files written by ``movement`` (``ds.to_netcdf``) or by kinefit's :func:`write_tracks`.
Older movement files with plural dim names (``keypoints``, ``individuals``) are accepted.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import xarray as xr

from pipeline.tracks.readers.reader_helpers import is_hdf5
from pipeline.tracks.schema import TracksError

FORMAT = "movement"
SUFFIXES: tuple[str, ...] = (".nc", ".nc4", ".netcdf", ".zarr")


def _open(path: Path) -> xr.Dataset:
    if path.is_dir():
        return xr.open_zarr(path, consolidated=False)
    # netCDF4 files are HDF5: h5netcdf (pure h5py) reads them without importing the
    # netCDF4 library, whose wheels can warn about the numpy they were built against
    if is_hdf5(path) and importlib.util.find_spec("h5netcdf") is not None:
        return xr.open_dataset(path, engine="h5netcdf")
    return xr.open_dataset(path)


def sniff(path: str | Path) -> bool:
    """Return True if ``path`` holds a dataset with a ``position`` variable."""
    path = Path(path)
    if path.is_dir() and not (path / "zarr.json").is_file() and not (path / ".zgroup").is_file():
        return False
    try:
        with _open(path) as ds:
            return "position" in ds.data_vars
    except Exception:  # noqa: BLE001 - anything unreadable is simply not this format
        return False


def read(path: str | Path) -> xr.Dataset:
    """Open a movement poses dataset.

    Parameters
    ----------
    path : str or Path
        ``.nc`` file or ``.zarr`` directory (a missing frame rate is settled by the
        registry, :func:`pipeline.tracks.reader_registry.with_fps`).

    Returns
    -------
    xarray.Dataset
        netCDF content is loaded into memory (the file is closed); zarr stays lazy.
    """
    path = Path(path)
    try:
        ds = _open(path)
    except (ValueError, OSError, KeyError) as exc:  # xarray: no engine reads it / damaged
        damaged = "damaged or truncated HDF5/netCDF file" if is_hdf5(path) else "not netCDF/zarr"
        raise TracksError(f"{path}: not a readable movement dataset ({damaged}: {exc})") from None
    if not path.is_dir():
        ds = ds.load()
        ds.close()
    ds.attrs.setdefault("source_file", str(path))
    return ds
