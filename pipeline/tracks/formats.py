"""Reader registry: pick a tracks reader by name, file suffix or content sniffing.

Each reader is a module in :mod:`pipeline.tracks.readers` exposing

- ``FORMAT: str``: the name users pass as ``format=`` (``--format`` on the CLI);
- ``SUFFIXES: tuple[str, ...]``: lower-case file suffixes it may read (``".nc"``);
- ``sniff(path) -> bool``: cheap check that the file really is this format;
- ``read(path, *, fps=None, **options) -> xr.Dataset``: the tracks dataset.

To add a format, write the module and append its dotted name to :data:`READER_MODULES`.
Modules are imported only when needed, so a reader's optional dependency is imported
inside its ``read``.
"""

from __future__ import annotations

import importlib
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import xarray as xr

from pipeline.tracks.schema import TracksError, validate_tracks

#: Reader modules, in sniffing priority order.
READER_MODULES: tuple[str, ...] = (
    "pipeline.tracks.readers.movement",
    "pipeline.tracks.readers.npz",
    "pipeline.tracks.readers.lightningpose",
    "pipeline.tracks.readers.dlc",
    "pipeline.tracks.readers.sleap",
    "pipeline.tracks.readers.anipose",
    "pipeline.tracks.readers.nwb",
    "pipeline.tracks.readers.c3d",
    "pipeline.tracks.readers.bvh",
    "pipeline.tracks.readers.csv",
    "pipeline.tracks.readers.kimodo",
)


def readers() -> dict[str, ModuleType]:
    """Return the reader modules by ``FORMAT`` name, in priority order."""
    out: dict[str, ModuleType] = {}
    for name in READER_MODULES:
        module = importlib.import_module(name)
        out[module.FORMAT] = module
    return out


def _suffixes(path: Path) -> list[str]:
    return [s.lower() for s in path.suffixes[-2:]] + [path.suffix.lower()]


def _describe(available: dict[str, ModuleType]) -> str:
    return "; ".join(f"{fmt} ({', '.join(m.SUFFIXES)})" for fmt, m in available.items())


def pick_reader(path: str | Path, format: str | None = None) -> ModuleType:
    """Return the reader module for ``path``.

    Parameters
    ----------
    path : str or Path
        Tracks file or directory.
    format : str, optional
        Reader name; default: chosen by suffix, then by sniffing the content.

    Raises
    ------
    TracksError
        Unknown ``format`` or no reader recognizes the file; the message lists the valid
        formats and their suffixes.
    """
    path = Path(path)
    available = readers()
    if format is not None:
        if format not in available:
            raise TracksError(
                f"{path}: unknown tracks format {format!r}; valid formats: {_describe(available)}"
            )
        return available[format]
    suffixes = set(_suffixes(path))
    by_suffix = [m for m in available.values() if suffixes & set(m.SUFFIXES)]
    for module in by_suffix:
        if module.sniff(path):
            return module
    for module in available.values():
        if module not in by_suffix and module.sniff(path):
            return module
    hint = (
        f"readers for its suffix ({', '.join(m.FORMAT for m in by_suffix)}) do not recognize it"
        if by_suffix
        else f"unknown suffix {path.suffix!r}"
    )
    raise TracksError(
        f"{path}: cannot tell the tracks format ({hint}); pass format= (--format), "
        f"valid formats: {_describe(available)}"
    )


def with_fps(ds: xr.Dataset, fps: float | None, source: str) -> xr.Dataset:
    """Settle the frame rate: the file's own rate wins, ``fps`` fills in when it has none.

    A frame-numbered time coordinate is converted to seconds. An explicit ``fps`` that
    disagrees with the rate the file records is ignored with a warning naming both values
    (a lab-wide ``--fps`` or config ``fps`` must not rescale files that know better).

    Raises
    ------
    TracksError
        Neither the file nor ``fps`` gives a frame rate, or ``fps`` is not positive.
    """
    if fps is not None:
        fps = float(fps)
        if not np.isfinite(fps) or fps <= 0:
            raise TracksError(f"{source}: fps must be a positive number, got {fps!r}")
    own = ds.attrs.get("fps")
    if own is not None and fps is not None and not np.isclose(float(own), fps, rtol=1e-9):
        warnings.warn(
            f"{source}: the file records {float(own):g} fps; ignoring fps={fps:g} "
            "(a file's own frame rate wins)",
            UserWarning,
            stacklevel=3,
        )
    rate = float(own) if own is not None else fps
    if rate is None:
        raise TracksError(
            f"{source}: the frame rate is unknown (attrs.fps missing); pass fps= (--fps)"
        )
    if ds.attrs.get("time_unit") == "frames":
        time = np.asarray(ds["time"].values, dtype=np.float64) / rate
        ds = ds.assign_coords(time=time)
    elif own is not None:
        return ds
    ds.attrs.update(fps=rate, time_unit="seconds")
    return ds


def read_tracks(
    path: str | Path, format: str | None = None, *, fps: float | None = None, **options: Any
) -> xr.Dataset:
    """Read a tracks file of any registered format into the movement poses schema.

    Parameters
    ----------
    path : str or Path
        Tracks file (or zarr directory).
    format : str, optional
        Reader name (see :func:`readers`); default by suffix and content.
    fps : float, optional
        Frames per second; required when the file does not record it.
    **options
        Passed to the reader's ``read``.

    Returns
    -------
    xarray.Dataset
        Validated tracks (:func:`pipeline.tracks.schema.validate_tracks`) with a known
        ``fps`` and ``time`` in seconds.

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    TracksError
        Unknown format, malformed content or unknown frame rate.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such tracks file")
    module = pick_reader(path, format)
    ds = module.read(path, fps=fps, **options)
    ds = validate_tracks(ds, source=str(path))
    return with_fps(ds, fps, str(path))
