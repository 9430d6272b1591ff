"""A 2D fit's residuals are pixels, whatever the scale the solver works at.

The reference is outside the solver: the fitted keypoints projected again (an image-plane
fit's plan positions divided by its ``image_scale``; a multi-camera fit's through the
cameras) and measured against the detections they were fitted to, in pixels. The
per-keypoint ``residual`` is the root mean square of that distance over the views that
observed the keypoint, ``rms_error`` and ``max_error`` the root mean square and largest
over every observation of a frame. (3D fits do not pass here: their residuals are lengths.)
"""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.bodyplan import load_body_plan
from pipeline.cameras import pack, project
from pipeline.fit.view_setup import ViewSetup
from pipeline.solve import SolverConfig
from pipeline.synth import SynthConfig, synthesize
from pipeline.synth.camera_views import ViewsConfig, render_views
from pipeline.tracks.mapping import map_keypoints
from tests.fixtures.multiview_rig import fly_rig
from tests.fixtures.shared_data import ROOT

MOUSE = ROOT / "configs" / "bodyplans" / "mouse_topdown.json"


def _check_pixels(result, predicted: np.ndarray, pixels: np.ndarray, seen: np.ndarray) -> None:
    """``result``'s residuals against the outside distances ``predicted`` - ``pixels``.

    ``predicted``, ``pixels``: (T, V, J, 2); ``seen``: (T, V, J) observed detections.
    """
    d2 = np.where(seen, np.sum((predicted - pixels) ** 2, axis=-1), 0.0)
    views = seen.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        per_keypoint = np.where(views > 0, np.sqrt(d2.sum(axis=1) / views), np.nan)
    count = seen.sum(axis=(1, 2))
    assert (count > 0).all()
    rms = np.sqrt(d2.sum(axis=(1, 2)) / count)
    peak = np.sqrt(d2.max(axis=(1, 2)))
    np.testing.assert_allclose(result.residual, per_keypoint, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(result.rms_error, rms, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(result.max_error, peak, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("pixels_per_unit", [0.4, 2.5])
def test_image_plane_residuals_are_pixels_at_any_scale(rng, pixels_per_unit):
    plan = load_body_plan(MOUSE)
    cfg = SynthConfig(n_frames=30, up_axis="z", unit="px", noise=0.005, root_turn=0.4)
    truth = synthesize(plan, cfg, rng).truth["position"].values[:, :2, :, 0]  # (T, 2, J)
    pixels = truth * pixels_per_unit + rng.normal(0, 2.0, truth.shape)  # 2 px of noise
    pixels[3, :, 1] = np.nan  # a missing detection
    mapping = map_keypoints(plan.joint_names, plan.joint_names)
    # a scale off the truth by 20 %: the fit is worse, its residuals still pixels
    scale = 1.2 / pixels_per_unit
    setup = ViewSetup("image", ("image",), image_scale=scale)
    confidence = np.ones((pixels.shape[0], plan.n_joints))
    result, reprojection = setup.solve(plan, SolverConfig(), mapping, pixels, confidence)

    predicted = np.asarray(result.fitted_position, np.float64)[:, None, :, :2] / scale
    observed = pixels.transpose(0, 2, 1)[:, None]  # (T, 1, J, 2)
    seen = np.isfinite(observed).all(axis=-1)
    _check_pixels(result, predicted, observed, seen)
    np.testing.assert_allclose(reprojection[:, 0], result.residual, rtol=1e-5, atol=1e-6)
    print(f"{pixels_per_unit} px per unit: median RMS {np.median(result.rms_error):.3g} px")
    assert np.median(result.rms_error) > 1.0  # pixels: 2 px noise and a wrong scale


def test_multi_camera_residuals_stay_pixels(fly_plan_path, rng):
    plan = load_body_plan(fly_plan_path)
    cameras = fly_rig(3)
    synth = synthesize(plan, SynthConfig(n_frames=20, unit="mm", up_axis="z"), rng)
    points = synth.truth["position"].values[..., 0].transpose(0, 2, 1)  # (T, J, 3)
    pixels, confidence = render_views(points, cameras, ViewsConfig(outliers=0.0), rng)
    mapping = map_keypoints(plan.joint_names, plan.joint_names)
    setup = ViewSetup("cameras", tuple(c.name for c in cameras), tuple(cameras))
    position = pixels.transpose(0, 1, 3, 2)  # (T, V, 2, J)
    result, reprojection = setup.solve(plan, SolverConfig(), mapping, position, confidence)

    fitted = np.asarray(result.fitted_position, np.float64)[:, :, None, :]
    predicted = project(pack(cameras), fitted).transpose(0, 2, 1, 3)  # (T, V, J, 2)
    seen = np.isfinite(pixels).all(axis=-1) & (confidence > 0)
    _check_pixels(result, predicted, pixels, seen)
    distance = np.sqrt(np.sum((predicted - pixels) ** 2, axis=-1))
    np.testing.assert_allclose(reprojection, np.where(seen, distance, np.nan), rtol=1e-5)
    print(f"fly, 3 cameras: median RMS {np.median(result.rms_error):.3g} px")
    assert 0.5 < np.median(result.rms_error) < 10  # 2 px of detection noise
