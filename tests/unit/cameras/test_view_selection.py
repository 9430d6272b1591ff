"""The views a keypoint is believed in: Pose2Sim's best-camera rule.

On a synthetic rig, a view put 80 px off is left out and the others kept; a point no set
of cameras brings under the threshold keeps none; low confidences do not count. On
Pose2Sim's demo, the kept views triangulate to Pose2Sim's own (unfiltered) ``.trc`` within
0.1 mm median: the rule is Pose2Sim's. Bad settings are one error each.
"""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.archive.view_files import read_views
from pipeline.cameras import pack, project, triangulate
from pipeline.cameras.view_selection import ViewSelection, best_views
from pipeline.errors import ConfigError
from pipeline.tracks.multiview import session_cameras
from pipeline.tracks.reader_registry import read_tracks
from tests.fixtures.multiview_rig import mannequin_rig
from tests.fixtures.shared_data import SHARED

DEMO = SHARED / "data" / "pose2sim"
VIEWS = [DEMO / "pose" / f"cam0{i}_json" for i in range(1, 5)]


def _pixels(rng, n=40, cams=4):
    cameras = mannequin_rig(cams)
    points = rng.uniform(-0.4, 0.4, (n, 3)) + [0.0, 0.9, 0.0]
    pix = project(pack(cameras), points[:, None, :])  # (n, C, 2)
    return cameras, pix + rng.normal(0.0, 0.5, pix.shape), np.ones(pix.shape[:2])


def test_a_view_far_off_is_left_out_and_the_rest_kept(rng):
    cameras, pix, w = _pixels(rng)
    rule = ViewSelection(15.0)
    assert best_views(cameras, pix, w, rule).all()  # clean: every view
    bad = pix.copy()
    bad[:10, 2] += [80.0, -40.0]  # camera 2 wrong on the first ten points
    keep = best_views(cameras, bad, w, rule)
    assert not keep[:10, 2].any() and keep[:10, [0, 1, 3]].all() and keep[10:].all()


def test_a_point_no_set_of_cameras_explains_keeps_none(rng):
    cameras, pix, w = _pixels(rng, cams=3)
    bad = pix.copy()
    bad[:5, 1] += [90.0, -60.0]  # one of three views wrong, and all three needed
    keep = best_views(cameras, bad, w, ViewSelection(15.0, min_views=3))
    assert not keep[:5].any() and keep[5:].all()
    low = w.copy()
    low[:, 0] = 0.2
    keep = best_views(cameras, pix, low, ViewSelection(15.0, min_confidence=0.3))
    assert not keep[:, 0].any() and keep[:, 1:].all()


def test_on_pose2sim_s_demo_the_kept_views_triangulate_to_its_trc():
    with pytest.warns(UserWarning):  # the demo's *.json.old files, skipped
        ds = read_views(VIEWS, DEMO / "Calib.toml", fps=60, view_max_error=15,
                        view_min_confidence=0.3)  # fmt: skip
    assert ds.attrs["view_selection"] == {"max_error": 15.0, "min_confidence": 0.3, "min_views": 2}
    rule = ViewSelection.from_attrs(ds.attrs["view_selection"], "demo")
    cams = list(session_cameras(ds, "demo"))
    pix = ds["position"].values[..., 0].transpose(0, 3, 1, 2)  # (T, K, C, 2)
    w = np.nan_to_num(ds["confidence"].values[..., 0].transpose(0, 2, 1))
    w = np.where(np.isfinite(pix).all(-1), w, 0.0)
    keep = best_views(cams, pix, w, rule)
    assert 0.5 < keep.sum() / (w > 0).sum() < 0.95  # some views of some keypoints left out
    points = triangulate(cams, pix, np.where(keep, w, 0.0))[..., [1, 2, 0]]  # Pose2Sim's turn
    trc = read_tracks(DEMO / "pose-3d" / "S00_P00_T01_BalancingTrial_0-100.trc")
    names = [str(k) for k in ds["keypoint"].values]
    for k in trc["keypoint"].values:
        theirs = trc["position"].sel(keypoint=k).values[..., 0]
        d = np.linalg.norm(points[:, names.index(str(k))] - theirs, axis=1)
        assert np.nanmedian(d) < 2e-4, k  # metres
    every = triangulate(cams, pix, w)[..., [1, 2, 0]]  # all views: up to 6 cm off on hips
    hip = names.index("RHip")
    far = np.linalg.norm(
        every[:, hip] - trc["position"].sel(keypoint="RHip").values[..., 0], axis=1
    )
    assert np.nanmedian(far) > 0.02


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_error": 0.0}, "view_max_error: must be a positive number"),
        ({"max_error": float("nan")}, "view_max_error: must be a positive number"),
        ({"max_error": 15.0, "min_confidence": -1.0}, "view_min_confidence: must be a number >= 0"),
        ({"max_error": 15.0, "min_views": 1}, "view_min_views: must be an integer >= 2"),
    ],
)
def test_bad_rules_are_refused(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        ViewSelection(**kwargs)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"view_min_views": 3}, r"need view_max_error \(px\)"),
        ({"view_max_error": "lots"}, "option view_max_error='lots'; expected a number"),
        ({"view_max_error": 15, "view_min_views": 2.5}, "view_min_views=2.5; expected an integer"),
    ],
)
def test_bad_view_options_at_ingest_are_one_error_each(options, message):
    with pytest.raises(ConfigError, match=message):
        read_views(VIEWS, DEMO / "Calib.toml", fps=60, **options)


def test_a_bad_stored_rule_is_named():
    with pytest.raises(ConfigError, match="attrs.view_selection"):
        ViewSelection.from_attrs({"max_error": 15, "margin": 3}, "s.zarr")
    assert ViewSelection.from_attrs(None, "s.zarr") is None


def test_a_fit_through_cameras_leaves_the_wrong_view_out_and_still_reports_it():
    from pipeline.bodyplan import mannequin
    from pipeline.fit.view_setup import ViewSetup
    from pipeline.solve import SolverConfig
    from pipeline.synth import SynthConfig, synthesize
    from pipeline.synth.camera_views import ViewsConfig, render_views
    from pipeline.tracks.mapping import map_keypoints

    plan, cams = mannequin(), mannequin_rig(4)
    rng = np.random.default_rng(11)
    synth = synthesize(plan, SynthConfig(n_frames=8, unit="m", up_axis="y"), rng)
    points = synth.truth["position"].values[..., 0].transpose(0, 2, 1)
    pixels, conf = render_views(points, cams, ViewsConfig(outliers=0.0, occlusion=0.0), rng)
    j = plan.joint_names.index(plan.joint_names[-1])
    pixels[:, 1, j] += [70.0, -50.0]  # camera 1 puts the last joint far off
    mapping = map_keypoints(plan.joint_names, plan.joint_names)
    position = pixels.transpose(0, 1, 3, 2)
    names = tuple(c.name for c in cams)
    error = {}
    for rule in (None, ViewSelection(15.0)):
        setup = ViewSetup("cameras", names, tuple(cams), selection=rule)
        fit, reproj = setup.solve(plan, SolverConfig(), mapping, position, conf)
        error[rule is not None] = np.linalg.norm(fit.fitted_position[:, j] - points[:, j], axis=-1)
        assert np.isfinite(reproj[:, 1, j]).all()  # the left-out detection is measured
    assert np.median(error[True]) < 0.3 * np.median(error[False])
    assert "view_selection" in ViewSetup("cameras", names, tuple(cams),
                                         selection=ViewSelection(15.0)).recipe()  # fmt: skip
