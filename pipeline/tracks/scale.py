"""Catch a length-unit mismatch between tracks and body plan before fitting.

A body plan's bone lengths are fixed, so tracks in another length unit (millimetres
against a plan in metres, centimetres against millimetres) cannot be fitted: the solver
would return a contorted best effort for every frame. The tracks store scan
(:func:`pipeline.provenance.fingerprint.scan_input`) measures, frame by frame, the extent of
the observed keypoints that map to joints divided by the extent of the same joints in
the plan's neutral pose (:func:`reference_points`), and takes the median;
:func:`check_scale` judges it. Real tracks of the right body sit within a factor of
about 1.5 (pose changes); unit mismatches are factors of 10, 25.4, 100 or 1000.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np

from pipeline.bodyplan.model import BodyPlan
from pipeline.kinematics.fk_jacobian import forward_kinematics
from pipeline.tracks.schema import TracksError
from pipeline.tracks.units import METRES_PER_UNIT, canonical_unit

#: A size ratio beyond this (or below its inverse) is an error ...
ERROR_RATIO = 5.0
#: ... and beyond this a warning.
WARN_RATIO = 2.0


class ScaleWarning(UserWarning):
    """The tracks are noticeably larger or smaller than the body plan."""


def reference_points(plan: BodyPlan, joints: Sequence[int]) -> np.ndarray:
    """``(len(joints), 3)`` positions of ``joints`` in the plan's neutral pose."""
    points = forward_kinematics(plan, np.asarray(plan.neutral, dtype=np.float64))
    return np.asarray(points, dtype=np.float64)[list(joints)]


def check_scale(ratio: float, plan: BodyPlan, *, source: str, unit: str | None = None) -> None:
    """Refuse tracks whose size does not match the body plan's.

    Parameters
    ----------
    ratio : float
        Median size of the tracks over the size of the same joints in the plan's neutral
        pose (:attr:`pipeline.provenance.fingerprint.InputScan.scale`); NaN skips the check.
    plan : BodyPlan
    source : str
        The tracks store, named in the message.
    unit : str, optional
        The tracks' ``unit`` attr, named in the message with the plan's
        (:attr:`BodyPlan.unit`).

    Raises
    ------
    TracksError
        The ratio is above :data:`ERROR_RATIO` or below its inverse.

    Warns
    -----
    ScaleWarning
        The ratio is above :data:`WARN_RATIO` or below its inverse.
    """
    if not (math.isfinite(ratio) and ratio > 0):
        return
    factor = max(ratio, 1.0 / ratio)
    if factor <= WARN_RATIO:
        return
    text = (
        f"{source}: field 'position': the tracked keypoints are {factor:.3g}x "
        f"{'larger' if ratio > 1 else 'smaller'} than the same joints of the body plan "
        f"{plan.source or ''} in its neutral pose (median over frames)"
    )
    tracks_unit, plan_unit = canonical_unit(unit), canonical_unit(plan.unit)
    hint = _conversion_hint(tracks_unit, plan_unit)
    if factor > ERROR_RATIO:
        raise TracksError(
            f"{text}. The tracks' length unit ({tracks_unit}) and the body plan's probably "
            f"differ (the body plan's: {plan_unit}; mm vs m is 1000x, cm vs mm 10x); {hint}. "
            f"Accepted: within {ERROR_RATIO:g}x of the plan's size"
        )
    warnings.warn(
        f"{text}; check that both use the same length unit (tracks: {tracks_unit}, body "
        f"plan: {plan_unit})",
        ScaleWarning,
        stacklevel=2,
    )


def _conversion_hint(tracks_unit: str, plan_unit: str) -> str:
    """What to do about a size mismatch, given the two units."""
    if tracks_unit in METRES_PER_UNIT and plan_unit in METRES_PER_UNIT:
        if tracks_unit != plan_unit:
            return f"re-ingest the tracks with --to-unit {plan_unit}"
        return "the units agree, so the body plan may be of another animal or scaled"
    missing = [
        what
        for what, unit in (
            ("the tracks (ingest -O unit=...)", tracks_unit),
            ('the body plan ("unit" in version 2, "x-unit" in version 1)', plan_unit),
        )
        if unit not in METRES_PER_UNIT
    ]
    return f"say the unit of {' and of '.join(missing)}, or convert one of them"
