"""Which calls the lane kernel solves, and the sequences it is given (:mod:`.lane_frames`).

A call's frames form independent *sequences* (:func:`sequence_starts`); a long sequence
is cut into warm-started pieces (:func:`cut_sequences`) so that one session fills the
lanes, and :func:`lanes_apply` decides whether a call has enough of them.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from pipeline.solve.compiled.bundles import Settings
from pipeline.solve.compiled.lane_forward import LANES
from pipeline.solve.compiled.tables import Tables

__all__ = ["MIN_LANE_SEQUENCES", "Pieces", "cut_sequences", "lanes_apply", "sequence_starts"]


def sequence_starts(cold: np.ndarray, chained: bool) -> np.ndarray:
    """First frames of a call's independent sequences, and its frame count last.

    Parameters
    ----------
    cold : (T,) bool
        ``Inputs.cold``.
    chained : bool
        ``Settings.chained``: without it every frame is a sequence of its own.

    Returns
    -------
    (S + 1,) int64
    """
    t = cold.shape[0]
    starts = np.flatnonzero(cold) if chained else np.arange(t)
    if t and (starts.size == 0 or starts[0] != 0):
        starts = np.concatenate([[0], starts])
    return np.append(starts, t).astype(np.int64)


#: Fewest sequences in a call for which the lanes are faster than the scalar loop: a pass
#: costs the same with idle lanes.
MIN_LANE_SEQUENCES = LANES // 2


def lanes_apply(tb: Tables, cfg: Settings, starts: np.ndarray) -> bool:
    """Whether a call with sequences ``starts`` (:func:`sequence_starts`) runs in lanes.

    Lanes need a plan without driven axes, at least one iteration and
    :data:`MIN_LANE_SEQUENCES` sequences (fewer leave most lanes idle).
    """
    return not tb.coupled and cfg.n_iterations >= 1 and starts.shape[0] - 1 >= MIN_LANE_SEQUENCES


class Pieces(NamedTuple):
    """Sequences cut into pieces for the lanes (:func:`cut_sequences`).

    Attributes
    ----------
    rows : (R,) int64
        The frames to solve, in order: each piece's warm-up frames, then its own.
    cold : (R,) bool
        The first row of each piece (its sequence's first frame, or its first warm-up frame).
    keep : (R,) bool
        Rows that are the call's frames (not warm-ups); ``rows[keep]`` is ``0..T-1``.
    """

    rows: np.ndarray
    cold: np.ndarray
    keep: np.ndarray


def _cut_at(observed: np.ndarray, a: int, n: int, k: int, warmup: int) -> list[int]:
    """Piece edges of the sequence ``[a, a + n)`` in ``k`` pieces, at fully seen frames.

    An edge ``lo`` needs its warm-up frames and itself to observe as many keypoints as the
    sequence's best frame: a piece that starts cold in a gap, or after one, would start
    from the neutral pose and may settle in another pose than the chain holds. Each ideal
    edge moves to the nearest such frame within a quarter piece; one with none is dropped.
    """
    full = observed[a : a + n] >= observed[a : a + n].max()
    # ok[i]: frames i - warmup .. i (within the sequence) are all fully seen
    run = np.zeros(n, np.int64)
    count = 0
    for i in range(n):
        count = count + 1 if full[i] else 0
        run[i] = count
    ok = run >= warmup + 1
    ok[: warmup + 1] = False
    edges = [a]
    span = max(1, n // (4 * k))
    for e in np.linspace(0, n, k + 1).round().astype(np.int64)[1:-1]:
        near = np.flatnonzero(ok[max(0, e - span) : min(n, e + span + 1)])
        if near.size:
            lo = int(near[np.argmin(np.abs(near + max(0, e - span) - e))] + max(0, e - span))
            if lo + a > edges[-1]:
                edges.append(lo + a)
    edges.append(a + n)
    return edges


def cut_sequences(
    starts: np.ndarray, observed: np.ndarray, lanes: int, warmup: int
) -> Pieces | None:
    """Cut each sequence of a chained call into up to :data:`LANES` pieces.

    As the numpy engine cuts a sequence (:func:`pipeline.solve.numpy.frames.sequence_in_lanes`):
    contiguous pieces of at least four warm-up lengths (and 8 frames), each after the first
    of its sequence warm-started on the ``warmup`` frames before it, which are solved and
    dropped, so every kept frame is warm-started as in one chain. A sequence is cut by its
    own length only, so its fit is the same alone (``solve_sequence``) and among others
    (``solve_sequences``).

    Parameters
    ----------
    starts : (S + 1,) int64
        :func:`sequence_starts`.
    observed : (T,) int
        Observed keypoints per frame: pieces start only where the frames are fully seen
        (:func:`_cut_at`).
    lanes : int
        ``SolverConfig.lanes``: the most pieces per sequence (1: never cut).
    warmup : int
        ``SolverConfig.warmup_frames``.

    Returns
    -------
    Pieces or None
        None when no sequence is cut.
    """
    lengths = np.diff(starts)
    min_len = max(4 * warmup, 8)
    share = np.clip(lengths // min_len, 1, min(lanes, LANES))
    if not (share > 1).any():
        return None
    rows, cold, keep = [], [], []
    cut = False
    for a, n, k in zip(starts[:-1], lengths, share.astype(int), strict=True):
        edges = _cut_at(observed, int(a), int(n), int(k), warmup) if k > 1 else [a, a + n]
        cut = cut or len(edges) > 2
        for lo, hi in zip(edges[:-1], edges[1:], strict=True):
            w0 = max(int(a), int(lo) - warmup)
            r = np.arange(w0, hi, dtype=np.int64)
            c = np.zeros(r.size, bool)
            c[0] = True
            rows.append(r)
            cold.append(c)
            keep.append(r >= lo)
    if not cut:
        return None
    return Pieces(np.concatenate(rows), np.concatenate(cold), np.concatenate(keep))
