"""Single-view calibration: a synthetic top-down mouse with known proportions, one view.

The subject is the shipped ``mouse_topdown`` with every symmetric segment group scaled
(up to 15 %) through the calibration's own parameters; it is drawn in its image plane at
a known number of pixels per length unit. Calibrated through that one view
(``single_view=True``), the plan's segment lengths over the estimated image scale must be
the subject's lengths in pixels; the template's are measurably off.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pipeline.bodyplan.library import shipped_plan
from pipeline.calibrate import CalibrationConfig, CalibrationSpec, calibrate, resolve
from pipeline.errors import CalibrationError
from pipeline.synth import SynthConfig, body_size, synthesize

PIXELS_PER_UNIT = 1.7


def _lengths(plan) -> np.ndarray:
    return np.linalg.norm([j.offset_pos for j in plan.joints], axis=1)


@pytest.fixture(scope="module")
def one_view():
    template = shipped_plan("mouse_topdown")
    spec = CalibrationSpec.from_mapping(template.calibration, "mouse_topdown")
    params = resolve(template, dataclasses.replace(spec, markers=()), size=body_size(template))
    theta = params.theta0.copy()
    n_groups = len(params.group_names)
    theta[1 : 1 + n_groups] = np.random.default_rng(3).uniform(-0.15, 0.15, n_groups)
    subject = params.apply(theta)
    cfg = SynthConfig(n_frames=120, up_axis="z", unit="px", noise=0.002, root_turn=0.4)
    tracks = synthesize(subject, cfg, np.random.default_rng(4), session="mouse").tracks
    flat = tracks.isel(space=[0, 1])
    flat = flat.assign(position=flat["position"] * PIXELS_PER_UNIT)
    return template, subject, flat


def test_segments_come_back_through_one_view(one_view):
    template, subject, flat = one_view
    config = CalibrationConfig(n_frames=60, min_frames=20)
    cal = calibrate(template, flat, config, single_view=True)
    (scale,) = cal.record["image_scales"].values()
    assert cal.record["observation"] == "image"
    segments = [s["joint"] for s in cal.record["segments"] if s["observed"]]
    idx = [template.joint_index(n) for n in segments]
    true_px = _lengths(subject)[idx] * PIXELS_PER_UNIT
    fitted_px = _lengths(cal.plan)[idx] / scale
    template_px = _lengths(template)[idx] / scale
    error = np.abs(fitted_px / true_px - 1)
    before = np.abs(template_px / true_px - 1)
    assert len(idx) >= 10 and np.median(error) < 0.03, (np.median(error), error.max())
    assert np.median(before) > 2 * np.median(error)
    assert cal.plan.calibration["markers"] == template.calibration["markers"]  # kept for 3D


def test_one_view_without_the_option_is_refused(one_view):
    template, _, flat = one_view
    with pytest.raises(CalibrationError, match="2-D tracks without cameras.*--single-view"):
        calibrate(template, flat, CalibrationConfig(n_frames=60, min_frames=20))
