"""Kimodo's smoothed root path, and resampling a canonical pose to 30 fps."""

import numpy as np
import pytest
from scipy.spatial.transform import Rotation, Slerp

from pipeline.export.kimodo.fk import slerp
from pipeline.export.kimodo.motion import resample_pose
from pipeline.export.kimodo.smooth import SMOOTH_ROOT_RADIUS, smooth_root_2d


def test_a_zigzag_within_the_tolerance_of_a_line_smooths_to_the_line():
    t = np.arange(200)
    line = np.stack([0.01 * t, 0.02 * t + 1.0], axis=1)
    zigzag = line + np.stack([0.04 * (-1.0) ** t, 0.0 * t], axis=1)
    smooth = smooth_root_2d(zigzag)
    assert np.abs(np.diff(smooth, 2, axis=0)).max() < 1e-4  # a straight line
    assert np.linalg.norm(smooth - zigzag, axis=1).max() <= SMOOTH_ROOT_RADIUS + 1e-9


@pytest.mark.parametrize("n", [1, 2, 3, 17, 300, 1000])
def test_the_path_always_stays_within_6_cm_of_the_pelvis(n, rng):
    t = np.arange(n) / 30
    pelvis = np.stack([np.sin(t), 1.3 * t], axis=1) + rng.normal(scale=0.03, size=(n, 2))
    smooth = smooth_root_2d(pelvis)
    assert smooth.shape == (n, 2)
    assert np.linalg.norm(smooth - pelvis, axis=1).max() <= SMOOTH_ROOT_RADIUS + 1e-9
    if n > 3:
        rough = np.abs(np.diff(pelvis, 2, axis=0)).sum()
        assert np.abs(np.diff(smooth, 2, axis=0)).sum() < 0.1 * rough


def test_slerp_matches_scipy(rng):
    a, b = Rotation.random(2, random_state=1)
    u = np.linspace(0, 1, 7)
    expected = Slerp([0, 1], Rotation.concatenate([a, b]))(u).as_quat(scalar_first=True)
    got = slerp(a.as_quat(scalar_first=True), -b.as_quat(scalar_first=True), u)
    np.testing.assert_allclose(np.abs(np.sum(got * expected, axis=1)), 1.0, atol=1e-12)


def test_resampling_to_30_fps_is_exact_for_uniform_motion():
    fps = 45.0
    t = np.arange(46) / fps  # 1 s
    axis = np.array([0.6, 0.0, 0.8])
    spin = Rotation.from_rotvec(np.outer(1.5 * t, axis))  # 1.5 rad/s about a fixed axis
    position = np.outer(t, [1.0, 0.0, -2.0]) + [0.0, 1.0, 0.0]
    joints = np.stack([spin.as_quat(scalar_first=True), spin.inv().as_quat(scalar_first=True)], 1)
    new, pos, ori, rot = resample_pose(t, position, spin.as_quat(scalar_first=True), joints)
    np.testing.assert_allclose(new, np.arange(31) / 30, atol=1e-12)
    np.testing.assert_allclose(pos, np.outer(new, [1.0, 0.0, -2.0]) + [0.0, 1.0, 0.0], atol=1e-12)
    want = Rotation.from_rotvec(np.outer(1.5 * new, axis))
    np.testing.assert_allclose(
        (Rotation.from_quat(ori, scalar_first=True) * want.inv()).magnitude(), 0.0, atol=1e-9
    )
    back = Rotation.from_quat(rot[:, 1], scalar_first=True) * want
    np.testing.assert_allclose(back.magnitude(), 0.0, atol=1e-9)
