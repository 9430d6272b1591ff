"""How much of a session the fit can see: the share of confident keypoint observations.

A keypoint observation counts when its position is finite and its confidence is at least
the fit's ``min_confidence`` and :data:`CONFIDENT` (NaN confidence with a finite position
counts: the tracker gave no score). A session where fewer than :data:`WARN_BELOW` of the
mapped observations count, or no frame has any, is fitted with an
:class:`ObservationWarning` giving both fractions: such a fit is mostly the plan's
neutral pose, not the animal.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import dask
import xarray as xr

from pipeline.errors import TracksError

__all__ = [
    "CONFIDENT",
    "WARN_BELOW",
    "ObservationWarning",
    "Observed",
    "confidence_level",
    "observed",
    "warn_if_empty",
]

#: Below this confidence a keypoint is not counted as confident, whatever ``min_confidence``.
CONFIDENT = 0.05
#: Warn when fewer than this fraction of the mapped keypoint observations count.
WARN_BELOW = 0.5


class ObservationWarning(UserWarning):
    """Most of a session's keypoints are missing or below the confidence threshold."""


@dataclass(frozen=True)
class Observed:
    """Fractions of a session the fit sees.

    Attributes
    ----------
    keypoints : float
        Confident mapped keypoint observations / all of them (frames x keypoints x
        individuals).
    frames : float
        Frame-individuals with at least one confident mapped keypoint / all of them.
    level : float
        The confidence a keypoint needed.
    """

    keypoints: float
    frames: float
    level: float


def confidence_level(min_confidence: float) -> float:
    """The confidence an observation needs to count: ``min_confidence``, at least CONFIDENT."""
    return max(float(min_confidence), CONFIDENT)


def observed(
    ds: xr.Dataset, keypoints: Sequence[int], min_confidence: float, source: str = "tracks"
) -> Observed:
    """The fractions of :class:`Observed` for the mapped ``keypoints`` (store indices).

    A pass over the data of its own: a 3D or single-view fit counts them in the input
    scan instead (:func:`pipeline.provenance.fingerprint.scan_input` with a ``level``).

    Raises
    ------
    TracksError
        A chunk of ``position`` or ``confidence`` cannot be read (``source`` names the
        store in the message).
    """
    level = confidence_level(min_confidence)
    index = list(keypoints)
    if not index or ds.sizes.get("time", 0) == 0:
        return Observed(0.0, 0.0, level)
    pos = ds["position"].isel(keypoint=index)
    finite = pos.notnull().all("space")
    if "view" in finite.dims:
        finite = finite.any("view")
    ok = finite
    if "confidence" in ds:
        conf = ds["confidence"].isel(keypoint=index)
        if "view" in conf.dims:
            conf = conf.max("view")
        ok = finite & ((conf >= level) | conf.isnull())
    try:
        share, frames = (float(v) for v in dask.compute(ok.mean(), ok.any("keypoint").mean()))
    except Exception as exc:  # noqa: BLE001 - codec and I/O errors of any kind
        raise TracksError(
            f"{source}: field 'position' or 'confidence': cannot read the stored data "
            f"(corrupt or truncated chunk?): {type(exc).__name__}: {exc}"
        ) from exc
    return Observed(share, frames, level)


def warn_if_empty(seen: Observed, source: str, min_confidence: float) -> None:
    """Warn (:class:`ObservationWarning`) when the session is mostly unobserved."""
    if seen.keypoints >= WARN_BELOW and seen.frames > 0:
        return
    frames = "no frame has any" if seen.frames == 0 else f"{seen.frames:.1%} of frames have any"
    warnings.warn(
        f"{source}: only {seen.keypoints:.1%} of the mapped keypoint observations are "
        f"confident (finite, confidence >= {seen.level:g}); {frames}. The fit drops "
        f"keypoints below solver.min_confidence ({min_confidence:g}) and keeps the plan's "
        "neutral pose where none is left (stop reason no_observations)",
        ObservationWarning,
        stacklevel=3,
    )
