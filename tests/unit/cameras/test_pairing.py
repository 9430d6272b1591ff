"""Views paired with a calibration's cameras: by name, normalised name, or sorted order."""

from __future__ import annotations

import warnings

import pytest
from typer.testing import CliRunner

from flows.cli import app
from pipeline.cameras import Camera
from pipeline.cameras.pairing import normalise_camera_name, pair_views
from pipeline.errors import CameraError
from pipeline.store import open_tracks
from tests.fixtures.shared_data import SHARED

POSE2SIM = SHARED / "data" / "pose2sim"


def cams(*names: str) -> list[Camera]:
    return [Camera(name=n, size=(640, 480), fx=500.0, fy=500.0, cx=320.0, cy=240.0) for n in names]


def test_normalised_names():
    assert {
        normalise_camera_name(n) for n in ("cam01", "cam_01", "Cam01", "cam01_json", "cam1")
    } == {"cam1"}
    assert normalise_camera_name("cam10") != normalise_camera_name("cam01")


def test_pairing_rules():
    four = cams("cam_01", "cam_02", "cam_03", "cam_04")
    got, rule = pair_views(four, ["cam_03", "cam_01"])
    assert [c.name for c in got] == ["cam_03", "cam_01"] and rule == "name"
    got, rule = pair_views(four, ["Cam02", "cam01_json", "cam4"])
    assert [c.name for c in got] == ["cam_02", "cam_01", "cam_04"] and rule == "normalised name"
    got, rule = pair_views(cams("b_cam", "a_cam"), ["right", "left"], named=False)
    assert [c.name for c in got] == ["b_cam", "a_cam"] and rule == "sorted order"


def test_ambiguity_and_missing_cameras_list_both_sides():
    with pytest.raises(
        CameraError,
        match=r"c.toml: view 'cam1' matches several cameras after "
        r"normalisation \('cam01', 'cam_1'\)",
    ):
        pair_views(cams("cam01", "cam_1", "cam02"), ["cam1", "cam02"], source="c.toml")
    with pytest.raises(
        CameraError,
        match=r"no camera named 'left', 'right' for those views; the "
        r"calibration's cameras: 'a_cam', 'b_cam'; views: 'left', 'right'",
    ):
        pair_views(cams("a_cam", "b_cam"), ["left", "right"], named=True)
    with pytest.raises(CameraError, match=r"3 views for 2 cameras, so sorted order cannot"):
        pair_views(cams("a_cam", "b_cam"), ["l", "m", "r"], named=False)


def test_cli_ingests_pose2sim_folders_pairing_printed_and_missing_camera(tmp_path):
    folders = [str(POSE2SIM / "pose" / f"cam0{i}_json") for i in (3, 1, 4, 2)]
    out = tmp_path / "demo.zarr"
    args = ["--calibration", str(POSE2SIM / "Calib.toml"), "--fps", "60", "-o", str(out)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ok = CliRunner().invoke(app, ["ingest", "--views", *folders, *args])
    assert ok.exit_code == 0, ok.output
    assert "paired views with cameras by normalised name: cam03_json -> cam_03" in ok.output
    ds = open_tracks(out)
    assert list(ds["view"].values) == ["cam_03", "cam_01", "cam_04", "cam_02"]
    assert ds.attrs["view_names"] == ["cam03_json", "cam01_json", "cam04_json", "cam02_json"]
    assert ds.attrs["skeleton"] == "BODY_25B" and ds.attrs["individuals_associated"] is True
    assert list(ds["individual"].values) == ["person"]  # matched across the views
    assert ds["person_index"].dims == ("time", "view")
    keep = tmp_path / "candidates.zarr"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ok = CliRunner().invoke(
            app, ["ingest", "--views", *folders, *args[:-1], str(keep), "-O", "associate=false"]
        )
    assert ok.exit_code == 0, ok.output
    ds = open_tracks(keep)
    assert ds.attrs["individuals_associated"] is False
    assert ds.sizes["individual"] == 3  # cam01's most candidates; others padded with NaN
    assert ds["position"].sel(view="cam_04", individual="person1").isnull().all()
    missing = tmp_path / "missing.zarr"
    bad = CliRunner().invoke(
        app,
        [
            "ingest",
            "--views",
            f"cam_01={folders[1]}",
            f"cam_09={folders[0]}",
            *args[:-1],
            str(missing),
        ],
    )
    assert bad.exit_code == 1, bad.output
    assert "no camera named 'cam_09' for those views" in bad.output
    assert "'cam_01', 'cam_02', 'cam_03', 'cam_04'" in bad.output
    assert not missing.exists()
