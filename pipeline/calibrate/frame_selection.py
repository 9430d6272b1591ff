"""Choosing the calibration frames: well observed, diverse, spread over the sessions.

A frame is a candidate when at least ``min_observed`` of the keypoints the plan maps are
observed in it. Candidates are thinned to an even stride in time (at most
``4 * n_frames`` per session), then farthest-point sampling on the frame's centred,
size-normalised keypoints picks the most different poses; each session gets its share of
``n_frames`` in proportion to its candidates, so every session contributes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.errors import CalibrationError

__all__ = ["FrameChoice", "choose_frames"]


@dataclass(frozen=True)
class FrameChoice:
    """Frames chosen from each session.

    Attributes
    ----------
    frames : tuple of (n_i,) int arrays
        Frame indices per session, sorted.
    candidates : tuple of int
        Well-observed frames per session.
    """

    frames: tuple[np.ndarray, ...]
    candidates: tuple[int, ...]

    @property
    def total(self) -> int:
        """Frames chosen over all sessions."""
        return int(sum(f.size for f in self.frames))


def _farthest(features: np.ndarray, n: int) -> np.ndarray:
    """Indices of ``n`` rows picked by farthest-point sampling (first: the medoid-ish)."""
    if n >= len(features):
        return np.arange(len(features))
    centre = features.mean(axis=0)
    first = int(np.argmin(((features - centre) ** 2).sum(axis=1)))
    chosen = [first]
    dist = ((features - features[first]) ** 2).sum(axis=1)
    for _ in range(n - 1):
        k = int(np.argmax(dist))
        chosen.append(k)
        dist = np.minimum(dist, ((features - features[k]) ** 2).sum(axis=1))
    return np.sort(np.asarray(chosen))


def _features(targets: np.ndarray) -> np.ndarray:
    """``(T, 3K)`` keypoints centred on their frame's mean, divided by the session's size."""
    centred = targets - np.nanmean(targets, axis=1, keepdims=True)
    size = np.nanmax(np.linalg.norm(centred, axis=2))
    return np.nan_to_num(centred / (size if size > 0 else 1.0)).reshape(len(targets), -1)


def choose_frames(
    sessions: Sequence[np.ndarray],
    n_frames: int = 1000,
    *,
    min_frames: int = 50,
    min_observed: float = 0.6,
    names: Sequence[str] | None = None,
) -> FrameChoice:
    """Pick the calibration frames of several sessions of one individual.

    Parameters
    ----------
    sessions : sequence of (T_i, J, 3) arrays
        Each session's targets in the plan's joint order, NaN where missing (joints that no
        keypoint maps are NaN throughout and do not count).
    n_frames : int
        Frames to choose over all sessions.
    min_frames : int
        Fewer well-observed frames than this is an error.
    min_observed : float
        Fraction of the mapped keypoints a frame must observe.
    names : sequence of str, optional
        Session names for messages.

    Returns
    -------
    FrameChoice

    Raises
    ------
    CalibrationError
        Fewer than ``min_frames`` well-observed frames in all sessions together.
    """
    names = list(names) if names is not None else [f"session {i}" for i in range(len(sessions))]
    candidates = []
    for targets in sessions:
        seen = np.isfinite(targets).all(axis=2)
        mapped = seen.any(axis=0)
        need = max(int(np.ceil(min_observed * mapped.sum())), 1)
        candidates.append(np.flatnonzero(seen[:, mapped].sum(axis=1) >= need))
    total = sum(c.size for c in candidates)
    if total < min_frames:
        counts = ", ".join(f"{n}: {c.size}" for n, c in zip(names, candidates, strict=True))
        raise CalibrationError(
            f"too few frames to calibrate: {total} frames observe at least "
            f"{min_observed:.0%} of the mapped keypoints ({counts}); calibration needs at "
            f"least {min_frames} (min_frames) — give more or better-tracked sessions"
        )
    chosen = []
    for targets, cand in zip(sessions, candidates, strict=True):
        share = int(round(n_frames * cand.size / total))
        if share == 0 or cand.size == 0:
            chosen.append(np.zeros(0, np.intp))
            continue
        stride = max(cand.size // (4 * share), 1)
        pool = cand[::stride]
        chosen.append(pool[_farthest(_features(targets[pool]), share)])
    return FrameChoice(tuple(chosen), tuple(c.size for c in candidates))
