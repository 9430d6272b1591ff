"""Projection and its Jacobian against OpenCV (cv2.projectPoints, cv2.fisheye) and FD."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from pipeline.cameras import Camera, distort, pack, project, project_jacobian, undistort
from tests.unit.cameras.rig import RADTAN, ring


def _points_in_view(cam: Camera, rng, n: int, half_fov: float) -> np.ndarray:
    """World points in front of ``cam`` within ``tan(angle) < half_fov`` of its axis."""
    z = rng.uniform(0.5, 6.0, n)
    xy = rng.uniform(-half_fov, half_fov, (n, 2)) * z[:, None]
    xc = np.column_stack([xy, z])
    return (xc - cam.tvec) @ cam.rotation_matrix  # R.T @ (xc - t)


def _opencv(cam: Camera, pts: np.ndarray):
    """OpenCV's pixels (N, 2) and d pixel / d point (N, 2, 3) via d/dtvec @ R."""
    if cam.distortion == "fisheye":
        pix, jac = cv2.fisheye.projectPoints(
            pts[:, None], cam.rvec, cam.tvec, cam.matrix, cam.dist_coeffs
        )
        d_t = jac.reshape(-1, 2, 15)[:, :, 11:14]  # f(2) c(2) k(4) om(3) T(3) alpha
    else:
        pix, jac = cv2.projectPoints(pts, cam.rvec, cam.tvec, cam.matrix, cam.dist_coeffs)
        d_t = jac.reshape(-1, 2, jac.shape[1])[:, :, 3:6]  # om(3) T(3) f(2) c(2) dist
    return pix.reshape(-1, 2), d_t @ cam.rotation_matrix


CASES = {
    "radtan5": dict(distortion="radtan", coefficients=RADTAN),
    "radtan4": dict(distortion="radtan", coefficients=(0.12, -0.31, -0.002, 0.0015)),
    "strong-barrel": dict(distortion="radtan", coefficients=(-0.38, 0.21, 0.0, 0.0, -0.07)),
    "fisheye": dict(distortion="fisheye", coefficients=(0.052, -0.011, 0.0031, -0.00052)),
    "none": dict(distortion="none", coefficients=()),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_projection_and_jacobian_match_opencv(case, rng):
    base = ring(4, fisheye=())[1]
    rvec = rng.normal(size=3)
    cam = base.replace(
        rotation=cv2.Rodrigues(rvec)[0], translation=(0.12, -0.3, 2.5), **CASES[case]
    )
    half = 1.2 if case == "fisheye" else 0.4
    pts = _points_in_view(cam, rng, 2000, half)
    pix, jac = project_jacobian(pack([cam]), pts[:, None])
    ref_pix, ref_jac = _opencv(cam, pts)
    assert np.abs(pix[:, 0] - ref_pix).max() < 1e-9
    assert np.abs(jac[:, 0] - ref_jac).max() < 1e-9 * np.abs(ref_jac).max()


def test_a_batch_of_mixed_cameras_matches_each_camera_alone(rng):
    cams = ring(4, fisheye=(1, 3)) + [
        ring(1, fisheye=())[0].replace(distortion="none", coefficients=())
    ]
    pts = rng.normal([0, 0, 0.9], 0.4, (300, 3))
    pix, jac = project_jacobian(pack(cams), pts[:, None])
    for c, cam in enumerate(cams):
        ref_pix, ref_jac = _opencv(cam, pts)
        assert np.abs(pix[:, c] - ref_pix).max() < 1e-9
        assert np.abs(jac[:, c] - ref_jac).max() < 1e-7
    # the view axis also takes one point per camera: (..., C, 3)
    per_view = rng.normal([0, 0, 0.9], 0.4, (7, len(cams), 3))
    one = project(pack(cams), per_view)
    for c, cam in enumerate(cams):
        assert np.allclose(one[:, c], project(pack([cam]), per_view[:, c : c + 1])[:, 0])


@pytest.mark.parametrize("fish", [(), (0,)])
def test_jacobian_matches_central_differences(fish, rng):
    cams = pack(ring(2, fisheye=fish))
    pts = rng.normal([0, 0, 0.9], 0.5, (50, 1, 3))
    _, jac = project_jacobian(cams, pts)
    h = 1e-6
    for k in range(3):
        step = np.zeros(3)
        step[k] = h
        fd = (project(cams, pts + step) - project(cams, pts - step)) / (2 * h)
        assert np.abs(jac[..., k] - fd).max() < 1e-5  # pixels per metre ~ 1e3


def test_fisheye_on_the_optical_axis_and_behind_the_camera():
    cam = ring(1, fisheye=(0,))[0]
    arrays = pack([cam])
    on_axis = cam.center + 2.0 * cam.rotation_matrix[2]  # straight ahead
    behind = cam.center - 2.0 * cam.rotation_matrix[2]
    pix, jac = project_jacobian(arrays, np.array([[on_axis], [behind]]))
    ref, _ = _opencv(cam, on_axis[None])
    assert np.allclose(pix[0, 0], [cam.cx, cam.cy]) and np.allclose(pix[0, 0], ref[0])
    assert np.isfinite(jac[0]).all() and np.abs(jac[0]).max() > 0
    assert np.isnan(pix[1]).all() and np.all(jac[1] == 0)


@pytest.mark.parametrize("fish", [(), (0,)])
def test_undistort_inverts_distort_and_matches_opencv(fish, rng):
    cam = ring(1, fisheye=fish)[0]
    arrays = pack([cam])
    pts = _points_in_view(cam, rng, 1000, 1.0 if fish else 0.4)
    pix = project(arrays, pts[:, None])
    xy = undistort(arrays, pix)
    back, _ = distort(arrays, xy)
    assert np.abs(back * arrays.focal + arrays.center - pix).max() < 1e-9  # pixels
    xc = pts @ cam.rotation_matrix.T + cam.tvec
    assert np.abs(xy[:, 0] - xc[:, :2] / xc[:, 2:]).max() < 1e-12
    crit = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 100, 1e-14)
    if fish:
        ref = cv2.fisheye.undistortPoints(pix, cam.matrix, cam.dist_coeffs, criteria=crit)
    else:
        ref = cv2.undistortPoints(pix, cam.matrix, cam.dist_coeffs, None, None, None, crit)
    ok = np.abs(ref[:, 0]).max(axis=1) < 1e5  # OpenCV marks unconverged points with -1e6
    assert ok.mean() > 0.99
    assert np.abs(ref[ok, 0] - xy[ok, 0]).max() < 1e-9


def test_undistort_keeps_missing_pixels_missing():
    arrays = pack(ring(2, fisheye=(1,)))
    pix = np.array([[[np.nan, np.nan], [640.0, 512.0]]])
    out = undistort(arrays, pix)
    assert np.isnan(out[0, 0]).all() and np.isfinite(out[0, 1]).all()


def test_undistort_gives_nan_where_the_lens_polynomial_has_no_inverse():
    # k1 < 0 alone: xd = x (1 + k1 r^2) peaks at r = 1/sqrt(-3 k1); farther pixels have no
    # undistorted point at all
    cam = ring(1, fisheye=())[0].replace(coefficients=(-0.3, 0.0, 0.0, 0.0, 0.0))
    arrays = pack([cam])
    peak = (1 / np.sqrt(0.9)) * (1 - 0.3 / 0.9)  # largest reachable xd
    pix = np.array(
        [[[cam.cx + 0.9 * peak * cam.fx, cam.cy]], [[cam.cx + 1.2 * peak * cam.fx, cam.cy]]]
    )
    out = undistort(arrays, pix)
    assert np.isfinite(out[0]).all() and np.isnan(out[1]).all()


def test_fisheye_undistort_gives_nan_past_the_fold():
    # k1 = -0.3: thd(th) = th (1 - 0.3 th^2) peaks at th = 1/sqrt(0.9) < pi/2
    cam = ring(1, fisheye=(0,))[0].replace(coefficients=(-0.3, 0.0, 0.0, 0.0))
    arrays = pack([cam])
    peak = (1 / np.sqrt(0.9)) * (1 - 0.3 / 0.9)
    pix = np.array(
        [[[cam.cx + 0.9 * peak * cam.fx, cam.cy]], [[cam.cx + 1.2 * peak * cam.fx, cam.cy]]]
    )
    out = undistort(arrays, pix)
    assert np.isfinite(out[0]).all() and np.isnan(out[1]).all()
    back, _ = distort(arrays, out[:1])
    assert np.allclose(back[0, 0, 0] * cam.fx + cam.cx, pix[0, 0, 0])
