"""The Camera model: validation, conversions, Rodrigues vectors against cv2.Rodrigues."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from pipeline.cameras import Camera
from pipeline.cameras.rodrigues import matrix_to_rvec, rvec_to_matrix
from pipeline.errors import CameraError
from tests.unit.cameras.rig import ring


def _cam(**changes) -> Camera:
    return ring(1, fisheye=())[0].replace(**changes)


def test_rodrigues_matches_opencv_at_every_angle(rng):
    vecs = [rng.normal(size=3) for _ in range(50)]
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    vecs += [axis * a for a in (0.0, 1e-10, 1e-5, np.pi - 1e-7, np.pi)]
    for r in vecs:
        rot = rvec_to_matrix(r)
        assert np.allclose(rot, cv2.Rodrigues(r)[0], atol=1e-14)
        back = matrix_to_rvec(rot)
        assert np.allclose(rvec_to_matrix(back), rot, atol=1e-12)
        assert np.linalg.norm(back) <= np.pi + 1e-12


def test_a_reflection_is_not_a_rotation():
    with pytest.raises(CameraError, match=r"camera 'camA': field 'rotation': not a rotation.*det"):
        _cam(rotation=np.diag([1.0, 1.0, -1.0]))


def test_a_singular_matrix_is_not_a_rotation():
    singular = np.array([[1.0, 0, 0], [0, 1, 0], [0, 1, 0]])
    with pytest.raises(CameraError, match=r"field 'rotation': not a rotation"):
        _cam(rotation=singular)


def test_a_scaled_rotation_is_not_a_rotation():
    with pytest.raises(CameraError, match=r"field 'rotation'"):
        _cam(rotation=1.01 * np.eye(3))


def test_shapes_and_values_are_checked():
    with pytest.raises(CameraError, match=r"field 'rotation': expected shape \(3, 3\)"):
        _cam(rotation=np.eye(4))
    with pytest.raises(CameraError, match=r"field 'translation': expected shape \(3,\)"):
        _cam(translation=(1.0, 2.0))
    with pytest.raises(CameraError, match=r"field 'fx': must be > 0"):
        _cam(fx=-3.0)
    with pytest.raises(CameraError, match=r"field 'size': expected positive whole pixels"):
        _cam(size=(1280.5, 1024))
    with pytest.raises(CameraError, match=r"field 'cy': non-finite"):
        _cam(cy=float("nan"))


def test_distortion_model_and_coefficient_count():
    with pytest.raises(CameraError, match=r"unknown distortion model 'brown'; valid: none, radtan"):
        _cam(distortion="brown")
    with pytest.raises(CameraError, match=r"fisheye takes 4 coefficients, got 5"):
        _cam(distortion="fisheye")
    with pytest.raises(CameraError, match=r"radtan takes 4 or 5 coefficients, got 3"):
        _cam(coefficients=(0.1, 0.2, 0.3))
    assert _cam(coefficients=(0.1, 0.2, 0.0, 0.0)).coefficients == (0.1, 0.2, 0.0, 0.0, 0.0)


def test_units_are_length_units_or_unknown():
    assert _cam(unit="millimeters").unit == "mm"
    assert _cam(unit=None).unit == "unknown"
    with pytest.raises(CameraError, match=r"field 'unit': 'px' is not a length unit; valid: m, cm"):
        _cam(unit="px")


def test_dict_round_trip_and_derived_arrays():
    cam = ring(4, fisheye=(3,))[3]
    again = Camera.from_dict(cam.to_dict())
    assert again == cam
    assert np.allclose(cam.rotation_matrix @ cam.center + cam.tvec, 0)
    assert cam.matrix[0, 0] == cam.fx and cam.matrix[1, 2] == cam.cy
    with pytest.raises(CameraError, match=r"<dict>: camera 'camD': missing fields \['unit'\]"):
        Camera.from_dict({k: v for k, v in cam.to_dict().items() if k != "unit"})


def test_from_rvec_matches_opencv():
    r = np.array([0.3, -1.2, 0.4])
    cam = Camera.from_rvec(r, name="a", size=(640, 480), fx=500, fy=500, cx=320, cy=240)
    assert np.allclose(cam.rotation_matrix, cv2.Rodrigues(r)[0], atol=1e-14)
    assert np.allclose(cam.rvec, r)
