"""Calibration targets of a single-view 2D session: its pixels at the estimated image scale.

One view observes the body through the image-plane projection
(:class:`pipeline.solve.XYView`: the image on the world's XY plane, ``image_scale`` plan
lengths per pixel). The scale is first estimated with the template
(:func:`pipeline.calibrate.image_scale.session_image_scale`); the pixels times that
scale are then the targets of the ordinary calibration (global and segment scales,
marker offsets, with the prior toward the template) through the same projection. The
global scale left to solve is then the body's size relative to the template at that
image scale (near 1), and the segment scales are its in-plane proportions.

What one view cannot tell: depth, and any tilt out of the image plane. A segment seen
foreshortened is calibrated short; the proportions are those of the body as it lies in
the image plane (:data:`pipeline.calibrate.image_scale.DEPTH_NOTE`).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from pipeline.bodyplan.model import BodyPlan
from pipeline.calibrate.image_scale import DEPTH_NOTE, session_image_scale
from pipeline.errors import CalibrationError
from pipeline.solve import SolverConfig
from pipeline.tracks.confidence import confidence_weights
from pipeline.tracks.mapping import KeypointMapping

__all__ = ["DEPTH_NOTE", "image_targets"]


def image_targets(
    plan: BodyPlan,
    one: xr.Dataset,
    mapping: KeypointMapping,
    name: str,
    config: SolverConfig | None = None,
) -> tuple[np.ndarray, np.ndarray, float]:
    """One individual's pixels as calibration targets in the plan's length unit.

    Parameters
    ----------
    plan : BodyPlan
        The template.
    one : xarray.Dataset
        A single-view 2D session with one individual (``individual`` dimension of 1).
    mapping : KeypointMapping
    name : str
        The session, named in errors.
    config : SolverConfig, optional
        The pose solver of the scale estimate.

    Returns
    -------
    targets : (T, J, 2) array
        Pixels times the image scale (plan length units), NaN where missing.
    weights : (T, J) array
        Confidence (1 where unknown), 0 where missing.
    image_scale : float
        Plan length units per pixel, estimated with the template.

    Raises
    ------
    CalibrationError
        No frame observes two mapped joints apart (nothing to measure a size on).
    """
    estimate = session_image_scale(one, plan, mapping, config)
    if estimate is None:
        raise CalibrationError(
            f"{name}: no frame observes two mapped keypoints apart, so one view gives no "
            "size to calibrate; map more keypoints or choose frames where the body is seen"
        )
    first = one.isel(individual=0)
    position = np.asarray(first["position"].transpose("time", "keypoint", "space").values)
    pixels = mapping.gather(position, axis=1)
    conf = mapping.gather(np.asarray(first["confidence"].transpose("time", "keypoint").values), 1)
    return pixels * estimate.value, confidence_weights(conf, pixels), float(estimate.value)
