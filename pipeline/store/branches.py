"""Chunks of a fit store turned onto one branch of their periodic coordinates.

Each chunk task keeps its own sequence continuous (:mod:`pipeline.fit.angle_branch`),
but two chunks solved apart may sit whole turns apart on a hinge. Before the store is
published, :func:`align_chunk_turns` walks the seams in order and adds to each chunk the
whole turns that bring its first frame nearest the last frame of the chunk before it
(per individual and coordinate), in ``dof_value`` and in the chunk's warm-up
(``seam_dof_value``) and tail, so the seam diagnostic compares like with like. A turn
that would take any of the chunk's frames outside the coordinate's limits is not
taken. Rerunning it changes nothing (the seams are already aligned).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import zarr
import zarr.api.asynchronous
from zarr.core.sync import sync

from pipeline.store.fit import MARKERS
from pipeline.store.seams import TAIL

__all__ = ["align_chunk_turns"]

TWO_PI = 2.0 * np.pi


def _turns_inside(
    turns: np.ndarray, block: np.ndarray, lower: np.ndarray, upper: np.ndarray
) -> np.ndarray:
    """``turns (individual, dof)`` set to 0 where they take a frame of ``block`` out of limits."""
    shifted = block + TWO_PI * turns
    with np.errstate(invalid="ignore"):
        outside = ((shifted < lower - 1e-9) | (shifted > upper + 1e-9)) & np.isfinite(block)
    return np.where(outside.any(axis=0), 0.0, turns)


def _seam_rows(dof_value: zarr.Array, layout: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(first, last)``, each ``(n_chunks, individual, dof)``: every chunk's first and last frame.

    One orthogonal selection of ``dof_value`` itself (each zarr chunk holding them is read
    once), so a rerun after an interrupted rewrite sees the frames as they are stored.
    """
    bounds = np.array([layout.bounds(k) for k in range(layout.n_chunks)])
    rows = np.unique(np.concatenate([bounds[:, 0], bounds[:, 1] - 1]))
    values = np.asarray(dof_value.get_orthogonal_selection((rows, slice(None), slice(None))))
    first, last = (values[np.searchsorted(rows, frames)] for frames in bounds.T - [[0], [1]])
    return first, last


async def _rewrite(path: str, layout: Any, shifts: dict[int, np.ndarray], extra: list[str]) -> None:
    """Add ``shifts[k]`` ``(individual, dof)`` to chunk ``k``'s frames and its marker rows.

    At most a few chunks at a time are in memory; their reads, encodings and writes overlap
    in zarr's event loop.
    """
    group = await zarr.api.asynchronous.open_group(store=path, mode="r+", zarr_format=3)
    dof_value = await group.getitem("dof_value")
    rows = [await group.getitem(name) for name in extra]  # "markers/tail": a path
    gate = asyncio.Semaphore(4)

    async def one(k: int, shift: np.ndarray) -> None:
        start, stop = layout.bounds(k)
        async with gate:
            block = await dof_value.getitem(slice(start, stop))
            await dof_value.setitem(slice(start, stop), block + shift)
            for array in rows:
                await array.setitem(k, await array.getitem(k) + shift)

    await asyncio.gather(*(one(k, shift) for k, shift in shifts.items()))


def align_chunk_turns(
    path: str | Path,
    layout: Any,
    periodic: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
) -> int:
    """Turn each chunk of a fully written fit store onto the branch of the one before it.

    The chunks' first and last frames are read once, the turns chained through them in
    memory, and only the chunks that turn are read in full (for the limit check, when a
    turned coordinate has limits) and rewritten.

    Parameters
    ----------
    path : str or Path
        A (partial) fit store whose chunks are all written.
    layout : FitLayout
    periodic : ndarray of bool, shape (n_dofs,)
        The coordinates defined up to whole turns (rad).
    lower, upper : ndarray, shape (n_dofs,)
        Their limits (``-inf``/``inf`` where unbounded).

    Returns
    -------
    int
        Chunks that were turned.
    """
    if layout.n_chunks < 2 or not np.any(periodic):
        return 0
    group = zarr.open_group(str(path), mode="r+", zarr_format=3)
    dof_value = group["dof_value"]  # (time, individual, dof)
    markers = group[MARKERS]
    extra = ["seam_dof_value"] + ([f"{MARKERS}/{TAIL}"] if TAIL in markers else [])
    cols = np.flatnonzero(periodic)
    lo, hi = np.asarray(lower)[cols], np.asarray(upper)[cols]
    bounded = np.isfinite(lo) | np.isfinite(hi)
    first, last = _seam_rows(dof_value, layout)
    first, last = first[..., cols], last[..., cols]
    shifts: dict[int, np.ndarray] = {}
    previous = np.zeros(first.shape[1:])  # chunk k-1's turns (individual, periodic dof)
    for k in range(1, layout.n_chunks):
        with np.errstate(invalid="ignore"):
            turns = np.rint((last[k - 1] + TWO_PI * previous - first[k]) / TWO_PI)
        turns = np.where(np.isfinite(turns), turns, 0.0)
        if (turns[:, bounded] != 0).any():
            start, stop = layout.bounds(k)
            turns = _turns_inside(turns, np.asarray(dof_value[start:stop])[..., cols], lo, hi)
        previous = turns
        if turns.any():
            shift = np.zeros((first.shape[1], periodic.shape[0]))
            shift[:, cols] = TWO_PI * turns
            shifts[k] = shift
    if shifts:
        sync(_rewrite(str(path), layout, shifts, extra))
    return len(shifts)
