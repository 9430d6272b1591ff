"""LightningPose prediction CSVs: DeepLabCut's single-animal table, told apart by content."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline.tracks import TracksError, read_tracks
from pipeline.tracks.readers import dlc, lightningpose
from tests.fixtures.readers_interop import assert_same_tracks

KEYPOINTS = ("paw_l", "paw_r", "nose_tip")


def lp_df(rng: np.random.Generator, n_frames: int = 5, scorer="heatmap_mhcrnn_tracker"):
    columns = pd.MultiIndex.from_product(
        [[scorer], KEYPOINTS, ["x", "y", "likelihood"]], names=["scorer", "bodyparts", "coords"]
    )
    values = rng.uniform(0, 400, (n_frames, len(columns)))
    values[:, 2::3] = rng.uniform(0, 1, (n_frames, len(KEYPOINTS)))
    return pd.DataFrame(values, columns=columns)


def test_lightning_pose_csv_is_sniffed_and_read_value_by_value(tmp_path: Path, rng) -> None:
    df = lp_df(rng)
    path = tmp_path / "video_preds.csv"
    df.to_csv(path)
    assert lightningpose.sniff(path) and not dlc.sniff(path)
    ds = read_tracks(path, fps=60)
    assert ds.attrs["source_software"] == "LightningPose"
    assert ds.attrs["source_format"] == "lightningpose"
    assert list(ds.keypoint.values) == list(KEYPOINTS)
    for kp in KEYPOINTS:
        for axis in ("x", "y"):
            want = df[("heatmap_mhcrnn_tracker", kp, axis)].to_numpy().astype(np.float32)
            np.testing.assert_array_equal(
                ds.position.sel(keypoint=kp, space=axis).values[:, 0], want
            )
        want = df[("heatmap_mhcrnn_tracker", kp, "likelihood")].to_numpy().astype(np.float32)
        np.testing.assert_array_equal(ds.confidence.sel(keypoint=kp).values[:, 0], want)
    assert (ds.attrs["unit"], ds.attrs["up_axis"]) == ("px", "-y")


def test_the_train_test_split_column_is_skipped(tmp_path: Path, rng) -> None:
    df = lp_df(rng, scorer="heatmap_tracker")
    df[("set", "", "")] = ["train", "train", "validation", "test", "unused"]
    path = tmp_path / "predictions.csv"
    df.to_csv(path)
    ds = read_tracks(path, fps=30)
    assert ds.attrs["source_software"] == "LightningPose"
    assert list(ds.keypoint.values) == list(KEYPOINTS)
    want = df[("heatmap_tracker", "paw_r", "y")].to_numpy().astype(np.float32)
    np.testing.assert_array_equal(ds.position.sel(keypoint="paw_r", space="y").values[:, 0], want)


def test_format_option_overrides_the_content_guess(tmp_path: Path, rng) -> None:
    path = tmp_path / "renamed_scorer.csv"
    lp_df(rng, scorer="my_model").to_csv(path)
    assert read_tracks(path, fps=30).attrs["source_software"] == "DeepLabCut"
    ds = read_tracks(path, format="lightningpose", fps=30)
    assert ds.attrs["source_software"] == "LightningPose"


def test_an_individuals_row_is_refused(tmp_path: Path, rng) -> None:
    columns = pd.MultiIndex.from_product(
        [["heatmap_tracker"], ["a", "b"], ["nose"], ["x", "y", "likelihood"]],
        names=["scorer", "individuals", "bodyparts", "coords"],
    )
    path = tmp_path / "two.csv"
    pd.DataFrame(rng.uniform(size=(3, 6)), columns=columns).to_csv(path)
    with pytest.raises(TracksError, match=r"two\.csv: has an 'individuals' header row.*dlc"):
        lightningpose.read(path, fps=30)


def test_missing_header_row_fails(tmp_path: Path, rng) -> None:
    src = tmp_path / "ok.csv"
    lp_df(rng).to_csv(src)
    lines = src.read_text().splitlines()
    path = tmp_path / "no_bodyparts.csv"
    path.write_text("\n".join([lines[0], *lines[2:]]) + "\n")
    with pytest.raises(
        TracksError, match=r"header row 2 should start with 'bodyparts', got 'coords'"
    ):
        lightningpose.read(path, fps=30)


def test_wrong_column_count_fails(tmp_path: Path, rng) -> None:
    src = tmp_path / "ok.csv"
    lp_df(rng).to_csv(src)
    lines = src.read_text().splitlines()
    lines[4] += ",0.5"
    path = tmp_path / "long_row.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TracksError, match=r"line 5 has 11 fields, the header has 10"):
        lightningpose.read(path, fps=30)


def test_unknown_keypoint_in_the_map_fails(tmp_path: Path, rng) -> None:
    path = tmp_path / "preds.csv"
    lp_df(rng).to_csv(path)
    with pytest.raises(TracksError, match=r"keypoint map names keypoint\(s\) \['paw'\]"):
        read_tracks(path, format="lightningpose", fps=30, keypoint_map={"paw": "hand"})


def test_movement_loader_agrees(tmp_path: Path, rng) -> None:
    load_poses = pytest.importorskip(
        "movement.io.load_poses", reason="movement (the optional interop extra) is not installed"
    )
    path = tmp_path / "preds.csv"
    lp_df(rng).to_csv(path)
    assert_same_tracks(lightningpose.read(path, fps=30), load_poses.from_lp_file(path, fps=30))
