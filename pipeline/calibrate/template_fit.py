"""Fit a shipped template to the subject of one 3D session before its fit (``-b auto``).

A template's segment lengths and marker places are a textbook adult's; a subject's differ
by centimetres, which is most of an uncalibrated fit's error on motion-capture markers.
:func:`fit_template` calibrates the template to the session's one individual
(:func:`pipeline.calibrate.calibrate`, on at most :data:`FRAMES` frames) with only the
markers the session observes, so that the fit that follows measures the subject. A
single-view 2D session is calibrated through the image plane at its estimated image
scale, segment scales only (:mod:`pipeline.calibrate.single_view`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import xarray as xr

from pipeline.bodyplan.model import BodyPlan
from pipeline.calibrate.spec import CalibrationSpec
from pipeline.calibrate.subject import CalibrationConfig, calibrate
from pipeline.errors import CalibrationError

__all__ = ["FRAMES", "TemplateFit", "fit_template"]

#: Calibration frames at most: its cost grows with them (50 frames of a 35-marker
#: Plug-in Gait session take a few seconds; the choice of the plan itself well under one).
FRAMES = 50


@dataclass(frozen=True)
class TemplateFit:
    """A template calibrated to a session, or why it was not.

    Attributes
    ----------
    plan : BodyPlan
        The calibrated plan, or the template unchanged.
    calibrated : bool
    note : str
        What was done: the RMS before and after and the global scale, or the reason the
        template is kept.
    """

    plan: BodyPlan
    calibrated: bool
    note: str


def fit_template(
    template: BodyPlan, ds: xr.Dataset, mapping: Mapping[str, str], source: str
) -> TemplateFit:
    """Calibrate ``template`` to the single individual of a 3D session, if it can be.

    Parameters
    ----------
    template : BodyPlan
        With a ``calibration`` field (every shipped plan has one).
    ds : xarray.Dataset
        The session's tracks (3-D in the template's unit, or one view's pixels).
    mapping : mapping
        Track keypoint -> joint.
    source : str
        Named in the note.

    Returns
    -------
    TemplateFit
        The template unchanged (and why) for multi-view tracks, several
        individuals, another length unit, or too few well-observed frames.
    """
    if "view" in ds.dims:
        return TemplateFit(template, False, "multi-view tracks: the template as shipped")
    if ds.sizes.get("individual", 1) != 1:
        return TemplateFit(template, False, "several individuals: calibrate each (calibrate)")
    one_view = ds.sizes.get("space") == 2
    if (
        not one_view
        and template.unit
        and ds.attrs.get("unit")
        not in (
            template.unit,
            None,
            "unknown",
        )
    ):
        return TemplateFit(
            template, False, f"tracks in {ds.attrs.get('unit')}, the template in {template.unit}"
        )
    spec = CalibrationSpec.from_mapping(template.calibration, source).to_dict()
    mapped = set(mapping.values())
    spec["markers"] = [m for m in spec.get("markers", []) if m in mapped]
    n = ds.sizes["time"]
    config = CalibrationConfig(
        n_frames=min(FRAMES, n), min_frames=max(1, min(50, n // 2)), spec=spec
    )
    try:
        cal = calibrate(template, ds, config, keypoint_map=dict(mapping), single_view=one_view)
    except CalibrationError as exc:
        return TemplateFit(template, False, f"not calibrated ({exc}); the template as shipped")
    how = " through one view (segments; depth unobservable)" if one_view else ""
    return TemplateFit(
        cal.plan,
        True,
        f"calibrated to {source}{how}: keypoint RMS {cal.rms_before:.4g} -> {cal.rms_after:.4g} "
        f"{template.unit or ''}, global scale {cal.global_scale:.3f}",
    )
