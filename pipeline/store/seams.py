"""Seam disagreement: how far a chunk's warm-up solve lands from the chunk before it.

Each chunk task solves ``overlap_frames`` frames before its first one to warm up and
stores that solve (``seam_dof_value``); the disagreement at seam ``k`` is the largest
``|warm-up - dof_value|`` over those frames and the DOFs. So that the summary never reads
whole ``dof_value`` chunks back, each task also keeps its own last ``overlap_frames``
solved frames in the store's marker group (``tail``, internal).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr
import zarr

__all__ = ["TAIL", "create_tail", "seam_disagreement", "write_tail"]

#: Array of the marker group holding each chunk's last ``overlap`` frames of ``dof_value``.
TAIL = "tail"


def create_tail(markers: zarr.Group, n_chunks: int, overlap: int, shape: tuple[int, int]):
    """Add the ``tail`` array ``(n_chunks, overlap, individual, dof)`` to the markers."""
    if overlap < 1:
        return
    markers.create_array(
        TAIL,
        shape=(n_chunks, overlap, *shape),
        chunks=(1, overlap, *shape),
        dtype="float64",
        fill_value=np.nan,
    )


async def write_tail(markers, k: int, dof_value: np.ndarray) -> None:
    """Store chunk ``k``'s last frames of ``dof_value`` ``(T, individual, dof)``.

    ``markers`` is the marker group opened with zarr's asynchronous API; a chunk shorter
    than the overlap is NaN-padded at the front.
    """
    array = await markers.getitem(TAIL)
    overlap = array.shape[1]
    tail = np.full((overlap, *dof_value.shape[1:]), np.nan)
    n = min(overlap, dof_value.shape[0])
    if n:
        tail[overlap - n :] = dof_value[dof_value.shape[0] - n :]
    await array.setitem(k, tail)


def seam_disagreement(path: str | Path, layout: Any, markers: zarr.Group) -> np.ndarray:
    """``(n_chunks, individual)`` float32: max warm-up disagreement per seam, NaN at 0.

    Parameters
    ----------
    path : str or Path
        A fit store whose chunks are all written.
    layout : FitLayout
    markers : zarr.Group
        Its marker group.
    """
    n_ind, overlap = len(layout.individuals), layout.overlap_frames
    seam = np.full((layout.n_chunks, n_ind), np.nan, dtype=np.float32)
    if overlap < 1 or layout.n_chunks < 2:
        return seam
    group = zarr.open_group(path, mode="r", zarr_format=3)
    warmups = np.asarray(group["seam_dof_value"][...])  # (n_chunks, overlap, ind, dof)
    # tails hold only their own chunk: with chunks shorter than the overlap, or a store
    # made before tails existed, read the frames before each seam back instead
    use_tails = TAIL in markers and layout.chunk_frames >= overlap
    tails = np.asarray(markers[TAIL][...]) if use_tails else None
    ds = None if use_tails else xr.open_zarr(path, consolidated=False)
    try:
        for k in range(1, layout.n_chunks):
            start, _ = layout.bounds(k)
            n = start - max(start - overlap, 0)
            if tails is not None:
                previous = tails[k - 1, overlap - n :]
            else:
                previous = ds["dof_value"].isel(time=slice(start - n, start)).values
            diff = np.abs(warmups[k, overlap - n :] - previous)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN individuals
                seam[k] = np.nanmax(diff, axis=(0, 2)) if diff.size else np.nan
    finally:
        if ds is not None:
            ds.close()
    return seam
