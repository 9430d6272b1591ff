"""OpenPose-style JSON folders, on Pose2Sim's demo detections (BODY_25B)."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from flows.cli import app
from pipeline.tracks import TracksError, read_tracks
from pipeline.tracks.pose_skeletons import SKELETONS
from pipeline.tracks.reader_registry import pick_reader
from tests.fixtures.shared_data import SHARED

POSE = SHARED / "data" / "pose2sim" / "pose"
CAM01 = POSE / "cam01_json"

#: Keypoint ids as Pose2Sim's skeletons.py defines them (perfanalytics/pose2sim).
POSE2SIM_IDS = {
    "BODY_25B": {
        "RHip": 12,
        "RKnee": 14,
        "RAnkle": 16,
        "RBigToe": 22,
        "RSmallToe": 23,
        "RHeel": 24,
        "LHip": 11,
        "LKnee": 13,
        "LAnkle": 15,
        "LBigToe": 19,
        "LSmallToe": 20,
        "LHeel": 21,
        "Neck": 17,
        "Head": 18,
        "Nose": 0,
        "RShoulder": 6,
        "RElbow": 8,
        "RWrist": 10,
        "LShoulder": 5,
        "LElbow": 7,
        "LWrist": 9,
    },
    "BODY_25": {
        "CHip": 8,
        "RHip": 9,
        "RKnee": 10,
        "RAnkle": 11,
        "RBigToe": 22,
        "RSmallToe": 23,
        "RHeel": 24,
        "LHip": 12,
        "LKnee": 13,
        "LAnkle": 14,
        "LBigToe": 19,
        "LSmallToe": 20,
        "LHeel": 21,
        "Neck": 1,
        "Nose": 0,
        "RShoulder": 2,
        "RElbow": 3,
        "RWrist": 4,
        "LShoulder": 5,
        "LElbow": 6,
        "LWrist": 7,
    },
    "HALPE_26": {
        "Hip": 19,
        "RHip": 12,
        "RKnee": 14,
        "RAnkle": 16,
        "RBigToe": 21,
        "RSmallToe": 23,
        "RHeel": 25,
        "LHip": 11,
        "LKnee": 13,
        "LAnkle": 15,
        "LBigToe": 20,
        "LSmallToe": 22,
        "LHeel": 24,
        "Neck": 18,
        "Head": 17,
        "Nose": 0,
        "RShoulder": 6,
        "RElbow": 8,
        "RWrist": 10,
        "LShoulder": 5,
        "LElbow": 7,
        "LWrist": 9,
    },
}


def _read(path, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return read_tracks(path, fps=60, **options)


@pytest.mark.parametrize("skeleton", sorted(POSE2SIM_IDS))
def test_keypoint_names_are_pose2sims(skeleton):
    names = SKELETONS[skeleton]
    assert {name: names.index(name) for name in POSE2SIM_IDS[skeleton]} == POSE2SIM_IDS[skeleton]
    assert len(set(names)) == len(names)


def test_pose2sim_demo_folder_values_candidates_and_attrs():
    with pytest.warns(
        UserWarning,
        match=r"cam01_json: skipped 1 file\(s\) that are not frame "
        r"files, e.g. 'cam01.0000.json.old'",
    ):
        ds = read_tracks(CAM01, fps=60)
    assert pick_reader(CAM01).FORMAT == "openpose"
    assert ds.sizes["time"] == 100 and ds.sizes["keypoint"] == 25
    assert list(ds["keypoint"].values) == list(SKELETONS["BODY_25B"])
    assert ds.attrs["skeleton"] == "BODY_25B" and ds.attrs["unit"] == "px"
    assert ds.attrs["individuals_associated"] is False
    assert ds.attrs["skipped_files"] == ["cam01.0000.json.old"]
    assert list(ds["individual"].values) == ["person0", "person1", "person2"]
    np.testing.assert_allclose(ds["time"].values, np.arange(100) / 60)
    # every person of every frame, as the file lists them
    for frame in (0, 37, 99):
        people = json.loads((CAM01 / f"cam01.{frame:04d}.json").read_text())["people"]
        for i in range(3):
            got = ds["position"].isel(time=frame, individual=i).values.T  # (keypoint, 2)
            if i >= len(people):
                assert np.isnan(got).all()
                continue
            raw = np.array(people[i]["pose_keypoints_2d"]).reshape(-1, 3)
            seen = raw[:, 2] > 0
            np.testing.assert_array_equal(got[seen], raw[seen, :2].astype(np.float32))
            assert np.isnan(got[~seen]).all()
            conf = ds["confidence"].isel(time=frame, individual=i).values
            np.testing.assert_array_equal(conf, raw[:, 2].astype(np.float32))


def _folder(tmp_path: Path, name: str, frames: list[list[list[float]]]) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    for t, people in enumerate(frames):
        body = {"version": 1.3, "people": [{"pose_keypoints_2d": p} for p in people]}
        (folder / f"{name}_{t:012d}_keypoints.json").write_text(json.dumps(body))
    return folder


def test_skeleton_by_count_layout_and_option(tmp_path, rng):
    coco = _folder(tmp_path, "coco", [[list(rng.uniform(1, 500, 51))] for _ in range(3)])
    assert _read(coco).attrs["skeleton"] == "COCO_17"
    assert _read(coco).attrs["skeleton_from"] == "keypoint count"
    # BODY_25: Pose2Sim's detections reordered, the mid-hip between the hips
    b25b = _read(CAM01, skeleton="body_25b")["position"].isel(individual=0).values
    assert _read(CAM01, skeleton="body_25b").attrs["skeleton_from"] == "option"
    order = [SKELETONS["BODY_25B"].index(k) if k != "CHip" else -1 for k in SKELETONS["BODY_25"]]
    frames = []
    for t in range(10):
        xy = b25b[t].T  # (keypoint, 2)
        kp = np.array([xy[i] if i >= 0 else (xy[11] + xy[12]) / 2 for i in order])
        triples = np.column_stack([np.nan_to_num(kp), np.isfinite(kp[:, 0]).astype(float)])
        frames.append([list(triples.ravel())])
    body25 = _folder(tmp_path, "b25", frames)
    ds = _read(body25)
    assert ds.attrs["skeleton"] == "BODY_25"
    np.testing.assert_allclose(
        ds["position"].sel(keypoint="RElbow").isel(individual=0).values,
        _read(CAM01)["position"].sel(keypoint="RElbow").isel(individual=0, time=slice(0, 10)),
    )
    with pytest.raises(
        TracksError,
        match=r"option 'skeleton': HALPE_26 has 26 keypoints, the "
        r"files have 17; skeletons with 17: COCO_17",
    ):
        _read(coco, skeleton="HALPE_26")
    with pytest.raises(TracksError, match=r"option 'skeleton': 'MPII'; valid: BODY_25, BODY_25B"):
        _read(coco, skeleton="MPII")


def test_mixed_skeletons_and_bad_frame_files_are_one_error_nothing_written(tmp_path, rng):
    mixed = _folder(
        tmp_path, "mixed", [[list(rng.uniform(1, 9, 75))], [list(rng.uniform(1, 9, 51))]]
    )
    out = tmp_path / "out.zarr"
    result = CliRunner().invoke(app, ["ingest", str(mixed), "--fps", "60", "-o", str(out)])
    assert result.exit_code == 1, result.output
    assert "mixed: mixed skeletons: the frame files differ in keypoint count" in result.output
    assert "17 keypoints in mixed_000000000001_keypoints.json" in result.output
    assert "25 keypoints in mixed_000000000000_keypoints.json" in result.output
    broken = tmp_path / "broken"
    shutil.copytree(CAM01, broken)
    (broken / "cam01.0050.json").write_text("{not json")
    result = CliRunner().invoke(app, ["ingest", str(broken), "--fps", "60", "-o", str(out)])
    assert result.exit_code == 1 and "cam01.0050.json: not a JSON frame file" in result.output
    assert not out.exists()
    with pytest.raises(TracksError, match=r"the frame rate is unknown"):
        read_tracks(CAM01)
