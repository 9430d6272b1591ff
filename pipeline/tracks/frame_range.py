"""A range of frames of a tracks dataset (``kinefit ingest --frames 100:400``)."""

from __future__ import annotations

import xarray as xr

from pipeline.tracks.schema import TracksError

__all__ = ["parse_frames", "select_frames"]


def parse_frames(spec: str) -> tuple[int | None, int | None]:
    """``"START:STOP"`` (either may be empty, Python slice rules) as two ints or None.

    Raises
    ------
    TracksError
        Not of the form ``START:STOP`` with integers.
    """
    parts = str(spec).split(":")
    try:
        if len(parts) != 2:
            raise ValueError
        start, stop = (int(p) if p.strip() else None for p in parts)
    except ValueError:
        raise TracksError(
            f"--frames: {spec!r} is not a frame range START:STOP (e.g. 0:500, 100:, :50)"
        ) from None
    return start, stop


def select_frames(ds: xr.Dataset, spec: str, source: str) -> xr.Dataset:
    """The frames ``spec`` (:func:`parse_frames`) of ``ds``, times kept as recorded.

    Raises
    ------
    TracksError
        A bad range, or one that selects no frame (naming the session's length).
    """
    start, stop = parse_frames(spec)
    out = ds.isel(time=slice(start, stop))
    if out.sizes["time"] == 0:
        raise TracksError(
            f"{source}: --frames {spec} selects no frame of its {ds.sizes['time']} frames"
        )
    out.attrs = dict(ds.attrs)
    return out
