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

from pathlib import Path
from typing import Any

import numpy as np
import zarr

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


def align_chunk_turns(
    path: str | Path,
    layout: Any,
    periodic: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
) -> int:
    """Turn each chunk of a fully written fit store onto the branch of the one before it.

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
    extra = [group["seam_dof_value"]]  # (seam, overlap, individual, dof)
    markers = group[MARKERS]
    if TAIL in markers:
        extra.append(markers[TAIL])
    cols = np.flatnonzero(periodic)
    lo, hi = np.asarray(lower)[cols], np.asarray(upper)[cols]
    turned = 0
    for k in range(1, layout.n_chunks):
        start, stop = layout.bounds(k)
        before = np.asarray(dof_value[start - 1])[:, cols]
        first = np.asarray(dof_value[start])[:, cols]
        with np.errstate(invalid="ignore"):
            turns = np.rint((before - first) / TWO_PI)
        turns = np.where(np.isfinite(turns), turns, 0.0)
        if not turns.any():
            continue
        block = np.asarray(dof_value[start:stop])
        turns = _turns_inside(turns, block[..., cols], lo, hi)
        if not turns.any():
            continue
        shift = np.zeros(block.shape[1:])
        shift[:, cols] = TWO_PI * turns
        dof_value[start:stop] = block + shift
        for array in extra:
            array[k] = np.asarray(array[k]) + shift
        turned += 1
    return turned
