"""Writing a fit store chunk by chunk: region writes, done markers, failures, the summary.

The store is made by :func:`pipeline.store.fit.create_fit_store`; each chunk task
writes its frames with :func:`write_chunk` and then sets its done marker
(:func:`mark_done`); a failed run records its failed chunks (:func:`record_failure`), and a
complete one is summarized by :func:`finalize` before it is published.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr
import zarr
import zarr.api.asynchronous
from zarr.core.sync import sync

from pipeline.store.fit import MARKERS, TIME_VARIABLES, FitLayout
from pipeline.store.seams import TAIL, seam_disagreement, write_tail

__all__ = [
    "chunk_seconds",
    "done_chunks",
    "finalize",
    "mark_done",
    "record_failure",
    "write_chunk",
]


def write_chunk(
    path: str | Path,
    k: int,
    frames: tuple[int, int],
    values: Mapping[str, np.ndarray],
    seam: np.ndarray | None,
) -> None:
    """Write chunk ``k``'s results with region writes aligned to the store's chunks.

    Parameters
    ----------
    path : str or Path
        Fit store made by :func:`create_fit_store`.
    k : int
        Chunk index.
    frames : (int, int)
        ``[start, stop)`` of chunk ``k`` (:meth:`FitLayout.bounds`).
    values : mapping
        Every name of :data:`TIME_VARIABLES` to an array with the chunk's frames first
        and the other dims as in :data:`VARIABLES`.
    seam : ndarray, shape (overlap, individual, dof), optional
        The chunk's warm-up solve of the frames before it (NaN-padded at the front).
    """
    start, stop = frames
    sync(_write_region(str(path), k, (start, stop), values, seam))


async def _write_region(path: str, k: int, frames, values, seam) -> None:
    """Write every array of chunk ``k`` at once.

    zarr's event loop overlaps their encoding and file writes: half the time of writing
    them one after another.
    """
    start, stop = frames
    group = await zarr.api.asynchronous.open_group(store=path, mode="r+", zarr_format=3)
    extra = [n for n in values if n not in TIME_VARIABLES]  # VIEW_VARIABLES of 2D fits
    names = [*TIME_VARIABLES, *extra] + (["seam_dof_value"] if seam is not None else [])
    arrays = await asyncio.gather(*(group.getitem(n) for n in names))
    writes = []
    for name, array in zip(names, arrays, strict=True):
        if name == "seam_dof_value":
            writes.append(array.setitem(k, np.asarray(seam, dtype=array.dtype)))
        else:
            data = np.asarray(values[name], dtype=array.dtype)
            writes.append(array.setitem(slice(start, stop), data))
    await asyncio.gather(*writes)
    markers = await group.getitem(MARKERS)
    if await markers.contains(TAIL):
        await write_tail(markers, k, np.asarray(values["dof_value"]))


def mark_done(path: str | Path, k: int, seconds: tuple[float, float, float, float]) -> None:
    """Record that chunk ``k`` is written (after its data), with its timings (s)."""
    group = zarr.open_group(path, mode="r+", zarr_format=3)[MARKERS]
    group["seconds"][k] = np.asarray(seconds, dtype=np.float64)
    group["done"][k] = 1


def record_failure(path: str | Path, chunks: list[int], errors: list[str]) -> None:
    """Mark a partial store as failed: attr ``failed`` = chunks, errors and time (UTC)."""
    group = zarr.open_group(path, mode="r+", zarr_format=3)
    at = dt.datetime.now(dt.UTC).isoformat()
    group.attrs["failed"] = {"chunks": list(chunks), "errors": list(errors), "at": at}


def done_chunks(path: str | Path) -> np.ndarray:
    """``(n_chunks,)`` bool: which chunks are marked done."""
    group = zarr.open_group(path, mode="r", zarr_format=3)[MARKERS]
    return np.asarray(group["done"][:]) == 1


def chunk_seconds(path: str | Path) -> np.ndarray:
    """``(n_chunks, 4)`` read, solve, write and total seconds per chunk (NaN if not done)."""
    return np.asarray(zarr.open_group(path, mode="r", zarr_format=3)[MARKERS]["seconds"][:])


def finalize(path: str | Path, layout: FitLayout, attrs: Mapping[str, Any]) -> int:
    """Compute the seam disagreements and write the final attrs (single writer).

    Returns
    -------
    int
        Frame-individuals the solver did not converge on (also stored as the attr
        ``not_converged``).
    """
    markers = zarr.open_group(path, mode="r", zarr_format=3)[MARKERS]
    seam = seam_disagreement(path, layout, markers)
    xr.Dataset({"seam_disagreement": (("seam", "individual"), seam)}).to_zarr(
        path, region={"seam": slice(0, layout.n_chunks)}, mode="r+", consolidated=False
    )
    group = zarr.open_group(path, mode="r+", zarr_format=3)
    not_converged = int(np.count_nonzero(~np.asarray(group["converged"][...])))
    if "failed" in group.attrs:  # an earlier run's failure, now resumed
        del group.attrs["failed"]
    finished = dt.datetime.now(dt.UTC).isoformat()
    group.attrs.update(
        {**attrs, "not_converged": not_converged, "complete": True, "finished": finished}
    )
    return not_converged
