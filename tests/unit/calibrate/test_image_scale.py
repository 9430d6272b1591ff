"""A single view's image scale, estimated from the pixels instead of guessed.

Synthetic: the planar top-down mouse plan moved in its plane and drawn at a known number
of pixels per length unit; the estimate must give that scale back. Real: SLEAP's
``minimal_back_proofread.slp`` (sleap-anipose's proofread mouse, 120 frames) with the
``mouse_topdown`` plan and a hand map; the reference is a scan of the fit's own
reprojection error over the scale (the fit a chunk task runs), refined by a parabola
through the lowest three points.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from pipeline.bodyplan import load_body_plan
from pipeline.calibrate.image_scale import (
    DEPTH_NOTE,
    estimate_image_scale,
    session_image_scale,
)
from pipeline.fit.view_setup import ViewSetup
from pipeline.solve import SolverConfig
from pipeline.synth import SynthConfig, synthesize
from pipeline.tracks import read_tracks
from pipeline.tracks.mapping import map_keypoints
from tests.fixtures.shared_data import SHARED

ROOT = Path(__file__).resolve().parents[3]
PLAN = ROOT / "configs" / "bodyplans" / "mouse_topdown.json"
SLP = SHARED / "data" / "realdata" / "unclaimed" / "minimal_back_proofread.slp"
SLP_MAP = {"Nose": "snout", "Ear_L": "leftear", "Ear_R": "rightear", "TTI": "tailbase"}


def slp_session():
    """The ``.slp`` mouse, the plan and the hand map's mapping (skips without them)."""
    if not SLP.is_file():
        pytest.skip(f"{SLP}: the shared real data is not here")
    pytest.importorskip("sleap_io")
    ds = read_tracks(SLP, fps=30.0)
    plan = load_body_plan(PLAN)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the 11 keypoints the plan has no joint for
        mapping = map_keypoints(ds["keypoint"].values, plan.joint_names, SLP_MAP)
    return ds, plan, mapping


@pytest.mark.parametrize("pixels_per_unit", [0.4, 2.5])
def test_synthetic_planar_body_gives_its_scale_back(rng, pixels_per_unit):
    plan = load_body_plan(PLAN)
    cfg = SynthConfig(n_frames=120, up_axis="z", unit="px", noise=0.005, root_turn=0.4)
    truth = synthesize(plan, cfg, rng).truth["position"].values[:, :2, :, 0]  # (T, 2, J)
    pixels = truth.transpose(0, 2, 1) * pixels_per_unit
    pixels += rng.normal(0, 0.005 * 108 * pixels_per_unit, pixels.shape)
    est = estimate_image_scale(plan, pixels, np.ones(pixels.shape[:2]), n_frames=60)
    assert est is not None and est.converged
    assert est.value == pytest.approx(1 / pixels_per_unit, rel=0.03)
    assert 0 < est.std < 0.2 * est.value and est.frames == 60 and est.note == DEPTH_NOTE


def test_nothing_to_measure_gives_no_estimate():
    plan = load_body_plan(PLAN)
    pixels = np.full((10, plan.n_joints, 2), np.nan)
    pixels[:, 0] = 100.0  # one joint seen: no distance in the image
    assert estimate_image_scale(plan, pixels, np.ones(pixels.shape[:2])) is None


def _reprojection_rms(plan, mapping, ds, scale: float) -> float:
    one = ds.isel(individual=0)
    pos = one["position"].transpose("time", "space", "keypoint").values
    conf = one["confidence"].transpose("time", "keypoint").values
    setup = ViewSetup("image", ("image",), image_scale=scale)
    _, error = setup.solve(plan, SolverConfig(), mapping, pos, conf)
    return float(np.sqrt(np.nanmean(error**2)))


@pytest.mark.slow
def test_slp_estimate_is_within_ten_percent_of_the_scanned_best_scale():
    ds, plan, mapping = slp_session()
    est = session_image_scale(ds, plan, mapping)
    assert est is not None
    grid = np.geomspace(0.45, 1.4, 17)
    rms = np.array([_reprojection_rms(plan, mapping, ds, s) for s in grid])
    k = int(np.argmin(rms))
    assert 0 < k < len(grid) - 1, (grid, rms)  # a minimum inside the scan
    x, y = np.log(grid[k - 1 : k + 2]), rms[k - 1 : k + 2]
    a, b, _ = np.polyfit(x, y, 2)
    best = float(np.exp(-b / (2 * a)))
    at_estimate = _reprojection_rms(plan, mapping, ds, est.value)
    at_one = _reprojection_rms(plan, mapping, ds, 1.0)
    print(
        f"slp mouse: estimated scale {est.value:.4f} +- {est.std:.3f}, scanned best "
        f"{best:.4f}; reprojection RMS {at_estimate:.2f} px there, {at_one:.2f} px at 1.0"
    )
    assert est.value == pytest.approx(best, rel=0.10)
    assert at_estimate < at_one
