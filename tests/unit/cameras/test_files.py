"""Calibration files: Anipose/Pose2Sim TOML, OpenCV FileStorage YAML/JSON, round trips."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from pipeline.cameras import match_views, pack, project, read_calibration, write_calibration
from pipeline.cameras.rodrigues import rvec_to_matrix
from pipeline.errors import CameraError
from tests.unit.cameras.rig import ring

# written by aniposelib 0.8.0's CameraGroup.dump (toml 0.10.2) for two cameras of ours
ANIPOSE_DUMP = """\
[cam_0]
name = "top"
size = [ 1280, 1024,]
matrix = [ [ 1650.5, 0.0, 641.0,], [ 0.0, 1648.25, 510.5,], [ 0.0, 0.0, 1.0,],]
distortions = [ -0.21, 0.094, 0.0011, -0.0007, -0.018,]
rotation = [ 0.1, -0.2, 0.3,]
translation = [ 0.05, -0.1, 2.5,]

[cam_1]
name = "side"
size = [ 1280, 1024,]
matrix = [ [ 620.0, 0.0, 640.0,], [ 0.0, 619.5, 512.0,], [ 0.0, 0.0, 1.0,],]
distortions = [ 0.052, -0.011, 0.0031, -0.00052,]
rotation = [ 1.2, 0.4, -0.3,]
translation = [ -0.3, 0.2, 3.1,]
fisheye = true

[metadata]
"""

# Pose2Sim's toml_write layout: tables named after the cameras, four distortion values
POSE2SIM = """\
[cam01]
name = "cam01"
size = [ 1088.0, 1920.0]
matrix = [ [ 1680.5, 0.0, 533.25], [ 0.0, 1680.75, 948.5], [ 0.0, 0.0, 1.0]]
distortions = [ -0.0007, 0.0022, 9.5e-06, 1.1e-05]
rotation = [ 1.69, 1.05, -0.42]
translation = [ 0.32, 0.96, 2.89]
fisheye = false

[cam02]
name = "cam02"
size = [ 1088.0, 1920.0]
matrix = [ [ 1673.7, 0.0, 534.5], [ 0.0, 1673.8, 963.2], [ 0.0, 0.0, 1.0]]
distortions = [ 0.01, -0.002, 0.0003, -0.00004]
rotation = [ 1.35, 1.6, -1.2]
translation = [ -0.11, 0.78, 3.07]
fisheye = true

[metadata]
adjusted = false
error = 0.0
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_reads_an_aniposelib_dump(tmp_path):
    top, side = read_calibration(_write(tmp_path, "calibration.toml", ANIPOSE_DUMP))
    assert (top.name, top.size, top.distortion) == ("top", (1280, 1024), "radtan")
    assert (top.fx, top.fy, top.cx, top.cy) == (1650.5, 1648.25, 641.0, 510.5)
    assert top.coefficients == (-0.21, 0.094, 0.0011, -0.0007, -0.018)
    assert np.allclose(top.rotation_matrix, cv2.Rodrigues(np.array([0.1, -0.2, 0.3]))[0])
    assert top.translation == (0.05, -0.1, 2.5) and top.unit == "unknown"
    assert side.distortion == "fisheye" and side.coefficients == (0.052, -0.011, 0.0031, -0.00052)


def test_reads_a_pose2sim_calibration_with_a_unit(tmp_path):
    a, b = read_calibration(_write(tmp_path, "Calib_scene.toml", POSE2SIM), unit="m")
    assert (a.name, b.name) == ("cam01", "cam02")
    assert a.distortion == "radtan" and a.coefficients == (-0.0007, 0.0022, 9.5e-06, 1.1e-05, 0.0)
    assert b.distortion == "fisheye" and len(b.coefficients) == 4
    assert a.size == (1088, 1920) and a.unit == b.unit == "m"


@pytest.mark.parametrize("suffix", [".toml", ".json"])
@pytest.mark.parametrize("unit", ["m", "unknown"])
def test_round_trip(tmp_path, suffix, unit):
    cams = ring(4, fisheye=(2,), unit=unit)
    path = write_calibration(tmp_path / f"calibration{suffix}", cams, metadata={"note": "rig"})
    again = read_calibration(path)
    assert [c.name for c in again] == [c.name for c in cams]
    for a, b in zip(cams, again, strict=True):
        assert a.allclose(b, rtol=1e-14, atol=1e-14), (a, b)
    # everything but the rotation is bit-exact; the rotation passes through its Rodrigues
    # vector (as aniposelib stores it), equal to a few ulps
    for a, b in zip(cams, again, strict=True):
        assert a.replace(rotation=b.rotation) == b
    pts = np.random.default_rng(1).normal([0, 0, 0.9], 0.3, (20, 1, 3))
    assert np.abs(project(pack(cams), pts) - project(pack(again), pts)).max() < 1e-9


def test_written_toml_loads_in_aniposelib(tmp_path):
    aniposelib = pytest.importorskip("aniposelib.cameras")
    cams = ring(3, fisheye=(1,))
    path = write_calibration(tmp_path / "calibration.toml", cams)
    group = aniposelib.CameraGroup.load(str(path))
    assert group.get_names() == [c.name for c in cams]
    pts = np.random.default_rng(2).normal([0, 0, 0.9], 0.3, (30, 3))
    ours = project(pack(cams), pts[:, None])
    for c, cam in enumerate(group.cameras):
        assert type(cam).__name__ == ("FisheyeCamera" if c == 1 else "Camera")
        theirs = cam.project(pts).reshape(-1, 2)
        assert np.abs(ours[:, c] - theirs).max() < 1e-9


def _filestorage(path: Path, cam, rotation: str) -> Path:
    fs = cv2.FileStorage(str(path), cv2.FILE_STORAGE_WRITE)
    fs.write("image_width", cam.size[0])
    fs.write("image_height", cam.size[1])
    fs.write("camera_matrix", cam.matrix)
    fs.write("distortion_coefficients", cam.dist_coeffs[None])
    if cam.distortion == "fisheye":
        fs.write("distortion_model", "equidistant")
    if rotation == "R":
        fs.write("R", cam.rotation_matrix)
    else:
        fs.write("rvec", cam.rvec[:, None])
    fs.write("T", cam.tvec[:, None])
    fs.release()
    return path


@pytest.mark.parametrize("suffix", [".yml", ".json"])
@pytest.mark.parametrize("rotation", ["R", "rvec"])
@pytest.mark.parametrize("fish", [(), (0,)])
def test_reads_opencv_filestorage(tmp_path, suffix, rotation, fish):
    cam = ring(1, fisheye=fish)[0]
    path = _filestorage(tmp_path / f"camA{suffix}", cam, rotation)
    (got,) = read_calibration(path, unit="m")
    assert got.allclose(cam, rtol=1e-12, atol=1e-12)


def test_reads_a_yaml_list_of_cameras_with_other_spellings(tmp_path):
    text = """\
cameras:
  - camera_name: left
    image_size: [640, 480]
    K: {rows: 3, cols: 3, data: [500.0, 0, 320, 0, 501.0, 240, 0, 0, 1]}
    D: [0.1, -0.05, 0.0, 0.0, 0.01]
    distortion_model: plumb_bob
    rotation_matrix: [1, 0, 0, 0, 1, 0, 0, 0, 1]
    tvec: [0.0, 0.0, 0.0]
    unit: mm
  - camera_name: right
    width: 640
    height: 480
    cameraMatrix: [[500.0, 0, 320], [0, 501.0, 240], [0, 0, 1]]
    distCoeffs: [0.1, -0.05, 0.0, 0.0, 0.01, 0, 0, 0]
    om: [0.0, 0.2, 0.0]
    translation_vector: [-100.0, 0.0, 0.0]
    unit: mm
"""
    left, right = read_calibration(_write(tmp_path, "stereo.yaml", text))
    assert left.name == "left" and left.size == (640, 480) and left.unit == "mm"
    assert right.coefficients == (0.1, -0.05, 0.0, 0.0, 0.01)
    assert np.allclose(right.rotation_matrix, rvec_to_matrix([0.0, 0.2, 0.0]))


# --- bad input: each one a CameraError naming the file, the camera and the field ---

GOOD = {
    "name": "top",
    "size": [1280, 1024],
    "matrix": [[1650.5, 0.0, 641.0], [0.0, 1648.25, 510.5], [0.0, 0.0, 1.0]],
    "distortions": [-0.21, 0.094, 0.0011, -0.0007, -0.018],
    "rotation": [0.1, -0.2, 0.3],
    "translation": [0.05, -0.1, 2.5],
}


def _json_file(tmp_path: Path, **changes) -> Path:
    table = {k: v for k, v in {**GOOD, **changes}.items() if v is not None}
    return _write(tmp_path, "calib.json", json.dumps({"cam_0": table}))


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"distortions": None}, r"calib.json: camera 'top': field 'distortion': missing"),
        ({"matrix": [[1.0, 0.0], [0.0, 1.0]]}, r"camera 'top': field 'matrix': expected a 3x3"),
        ({"rotation": [[1, 0, 0], [0, 1, 0], [0, 0, 2]]}, r"field 'rotation': not a rotation"),
        ({"rotation": [1.0, 2.0]}, r"field 'rotation': expected a Rodrigues vector"),
        ({"translation": None}, r"field 'translation': missing translation; expected one of"),
        ({"size": None}, r"field 'size': missing image size"),
        ({"distortion_model": "rational"}, r"field 'distortion_model': unknown distortion model"),
        ({"fisheye": True}, r"field 'distortions': fisheye takes 4 coefficients"),
        ({"distortions": [0.1] * 8}, r"field 'distortions': radtan takes 4 or 5 coefficients"),
        ({"matrix": [[1650.5, 2.0, 641.0], [0, 1648.25, 510.5], [0, 0, 1]]}, r"skew 2.0"),
        ({"matrix": "big"}, r"field 'matrix': expected numbers"),
    ],
)
def test_bad_camera_fields(tmp_path, changes, match):
    with pytest.raises(CameraError, match=match):
        read_calibration(_json_file(tmp_path, **changes))


def test_missing_distortion_in_toml_names_file_camera_and_keys(tmp_path):
    text = ANIPOSE_DUMP.replace("distortions = [ -0.21, 0.094, 0.0011, -0.0007, -0.018,]\n", "")
    path = _write(tmp_path, "calibration.toml", text)
    with pytest.raises(
        CameraError,
        match=r"calibration.toml: camera 'top': field 'distortion'.*"
        r"distortions, dist_coeffs",
    ):
        read_calibration(path)


def test_duplicate_camera_names(tmp_path):
    text = ANIPOSE_DUMP.replace('name = "side"', 'name = "top"')
    with pytest.raises(CameraError, match=r"calibration.toml: camera 'top': duplicate camera name"):
        read_calibration(_write(tmp_path, "calibration.toml", text))


@pytest.mark.parametrize(
    ("name", "text", "match"),
    [
        ("calibration.toml", "[cam_0\nname = 1", r"calibration.toml: not valid TOML"),
        ("calib.yml", "a: [1, 2\nb: {", r"calib.yml: not valid YAML"),
        ("calib.json", '{"a": ', r"calib.json: not valid JSON"),
        ("calib.json", "[1, 2]", r"calib.json: expected a mapping at the top level"),
        ("calib.yml", "flags: 3\n", r"calib.yml: no camera found: expected a camera matrix key"),
        ("calibration.toml", "[metadata]\n", r"calibration.toml: no camera tables"),
        ("calib.xml", "<opencv_storage/>", r"calib.xml: unknown calibration format '.xml'"),
    ],
)
def test_files_that_do_not_parse(tmp_path, name, text, match):
    with pytest.raises(CameraError, match=match):
        read_calibration(_write(tmp_path, name, text))


def test_unit_argument_contradicting_the_file(tmp_path):
    path = write_calibration(tmp_path / "calibration.toml", ring(2, unit="mm"))
    assert read_calibration(path, unit="millimetres")[0].unit == "mm"
    with pytest.raises(CameraError, match=r"field 'unit': unit='m' contradicts"):
        read_calibration(path, unit="m")
    with pytest.raises(CameraError, match=r"'furlong' is not a length unit"):
        read_calibration(_write(tmp_path, "c.toml", ANIPOSE_DUMP), unit="furlong")


def test_match_views_orders_cameras_by_view_name(tmp_path):
    cams = ring(4)
    got = match_views(cams, ["camC", "camA"], "calibration.toml")
    assert [c.name for c in got] == ["camC", "camA"]
    with pytest.raises(
        CameraError,
        match=r"calibration.toml: no camera named 'top', 'camE' for those views; the "
        r"calibration's cameras: 'camA', 'camB', 'camC', 'camD'",
    ):
        match_views(cams, ["camA", "top", "camE"], "calibration.toml")
    with pytest.raises(CameraError, match="views named more than once: camA"):
        match_views(cams, ["camA", "camA"])
