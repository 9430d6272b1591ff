"""DLT triangulation through distorted lenses: exact on clean pixels, NaN below 2 views."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.cameras import pack, project, reprojection_error, triangulate
from tests.unit.cameras.rig import ring


@pytest.fixture
def rig():
    return ring(4, fisheye=(3,))


def test_clean_pixels_give_the_points_back(rig, rng):
    pts = rng.normal([0, 0, 0.9], 0.4, (10, 25, 3))  # (frames, keypoints, 3)
    pix = project(pack(rig), pts[..., None, :])  # (10, 25, C, 2)
    got = triangulate(rig, pix)
    assert got.shape == pts.shape
    assert np.abs(got - pts).max() < 1e-9  # metres
    assert np.nanmax(reprojection_error(rig, got, pix)) < 1e-6  # pixels


def test_missing_views_and_weights(rig, rng):
    pts = rng.normal([0, 0, 0.9], 0.4, (200, 3))
    pix = project(pack(rig), pts[:, None])
    pix[:50, 1:] = np.nan  # seen by one camera only
    pix[50:100, 2:] = np.nan  # two cameras
    w = np.ones(pix.shape[:-1])
    w[100:150, 1:] = 0.0  # weight 0 drops the view, so again one camera
    w[150:, 0] = np.nan
    got = triangulate(rig, pix, w)
    assert np.isnan(got[:50]).all() and np.isnan(got[100:150]).all()
    assert np.abs(got[50:100] - pts[50:100]).max() < 1e-9
    assert np.abs(got[150:] - pts[150:]).max() < 1e-9
    three = triangulate(rig, pix, w, min_views=3)
    assert np.isnan(three[50:100]).all() and np.isfinite(three[150:]).all()


def test_a_low_weight_view_moves_the_point_less(rig, rng):
    pts = rng.normal([0, 0, 0.9], 0.3, (100, 3))
    pix = project(pack(rig), pts[:, None])
    pix[:, 0] += 40.0  # one view off by 40 px
    trusted = np.ones(pix.shape[:-1])
    doubted = trusted.copy()
    doubted[:, 0] = 0.05
    err_trusted = np.linalg.norm(triangulate(rig, pix, trusted) - pts, axis=-1)
    err_doubted = np.linalg.norm(triangulate(rig, pix, doubted) - pts, axis=-1)
    assert np.median(err_doubted) < 0.1 * np.median(err_trusted)


def test_noise_gives_millimetre_errors(rig, rng):
    pts = rng.normal([0, 0, 0.9], 0.4, (500, 3))
    pix = project(pack(rig), pts[:, None]) + rng.normal(0, 1.0, (500, 4, 2))
    err = np.linalg.norm(triangulate(rig, pix) - pts, axis=-1)
    assert np.median(err) < 5e-3  # 1 px noise at 3 m (f = 620 to 1650 px): a few mm


def test_bad_shapes(rig):
    with pytest.raises(ValueError, match=r"expected \(\.\.\., 4, 2\)"):
        triangulate(rig, np.zeros((5, 3, 2)))
    with pytest.raises(ValueError, match="min_views must be >= 2"):
        triangulate(rig, np.zeros((5, 4, 2)), min_views=1)


def test_matches_aniposelib(rig, rng):
    aniposelib = pytest.importorskip("aniposelib.cameras")
    group = aniposelib.CameraGroup.from_dicts(
        [
            {
                "name": c.name,
                "size": list(c.size),
                "matrix": c.matrix.tolist(),
                "distortions": list(c.coefficients),
                "rotation": c.rvec.tolist(),
                "translation": list(c.translation),
                "fisheye": c.distortion == "fisheye",
            }
            for c in rig
        ]
    )
    pts = rng.normal([0, 0, 0.9], 0.4, (300, 3))
    pix = project(pack(rig), pts[:, None]) + rng.normal(0, 2.0, (300, 4, 2))
    pix[:40, 2:] = np.nan
    ours = triangulate(rig, pix)
    theirs = group.triangulate(np.ascontiguousarray(pix.transpose(1, 0, 2)), undistort=True)
    assert np.abs(ours - theirs).max() < 1e-6
