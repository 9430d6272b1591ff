"""Pose2Sim's Config.toml read for a session: the demo's and broken ones."""

from __future__ import annotations

import pytest

from pipeline.config.pose2sim_project import pose2sim_reader_options
from pipeline.errors import ConfigError
from tests.fixtures.shared_data import SHARED

CONFIG = SHARED / "data" / "pose2sim" / "Config.toml"


def test_the_demo_config_gives_rate_skeleton_world_and_association():
    assert pose2sim_reader_options(CONFIG) == {
        "up_axis": "z",
        "time_origin": "pose2sim",
        "fps": 60.0,
        "skeleton": "BODY_25B",
        "association_min_confidence": 0.3,
        "association_max_error": 20.0,
        "association_min_views": 2,
        "association_keypoints": "Neck",
        "view_max_error": 15.0,
        "view_min_confidence": 0.3,
        "view_min_views": 2,
    }


def test_frame_range_and_bad_fields_are_one_error_each(tmp_path):
    good = tmp_path / "Config.toml"
    good.write_text("[project]\nframe_range = [10, 40]\n[pose]\npose_model = 'coco'\n")
    opts = pose2sim_reader_options(good)
    assert opts["frame_range"] == (10, 40) and opts["skeleton"] == "COCO_18"
    assert "view_min_views" not in opts  # no camera rule without its error threshold
    cases = {
        "[pose]\npose_model = 'MPII'\n": r"pose.pose_model = 'MPII': no kinefit skeleton; valid: "
        r"BODY_25B, BODY_25, COCO",
        "[project]\nframe_range = [40, 10]\n": r"frame_range = \[40, 10\]: expected 0 <= start",
        "[project]\nframe_rate = 'fast'\n": r"project.frame_rate = 'fast': expected a number",
        "[project\n": r"not a TOML file",
    }
    for text, message in cases.items():
        bad = tmp_path / "bad.toml"
        bad.write_text(text)
        with pytest.raises(ConfigError, match=message):
            pose2sim_reader_options(bad)
    with pytest.raises(ConfigError, match="no such Pose2Sim config file"):
        pose2sim_reader_options(tmp_path / "none.toml")


def test_ingest_with_the_pose2sim_config_reads_the_demo_as_pose2sim_does(tmp_path):
    import warnings

    import numpy as np
    from typer.testing import CliRunner

    from flows.cli import app
    from pipeline.store import open_tracks

    demo = SHARED / "data" / "pose2sim"
    config = tmp_path / "Config.toml"
    config.write_text(CONFIG.read_text().replace("frame_range = []", "frame_range = [30, 60]"))
    out = tmp_path / "demo.zarr"
    folders = [str(demo / "pose" / f"cam0{i}_json") for i in range(1, 5)]
    args = ["--calibration", str(demo / "Calib.toml"), "--pose2sim-config", str(config)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the skipped *.json.old files
        ok = CliRunner().invoke(app, ["ingest", "--views", *folders, *args, "-o", str(out)])
    assert ok.exit_code == 0, ok.output
    ds = open_tracks(out)
    assert ds.sizes["time"] == 30 and ds.attrs["fps"] == 60.0
    # Pose2Sim numbers a range's frames from 1 (Frame# 1 at 1/60 s in its .trc and .mot)
    np.testing.assert_allclose(ds["time"].values, np.arange(1, 31) / 60)
    assert ds.attrs["time_origin"] == "pose2sim"
    assert ds.attrs["skeleton"] == "BODY_25B" and ds.attrs["up_axis"] == "z"
    assert ds.attrs["association"]["keypoints"] == ["Neck"]
    assert ds.attrs["view_selection"] == {"max_error": 15.0, "min_confidence": 0.3, "min_views": 2}
    np.testing.assert_array_equal(ds["person_index"].sel(time=23 / 60).values, [0, 0, -1, 0])
