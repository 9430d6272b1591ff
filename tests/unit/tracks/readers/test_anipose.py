"""Anipose 3D CSVs written the way anipose's triangulate step writes them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline.tracks import TracksError, read_tracks
from pipeline.tracks.readers import anipose
from tests.fixtures.readers_interop import assert_same_tracks

#: Deliberately not sorted: the reader keeps the file's order.
KEYPOINTS = ("nose", "left_ear", "tail_base")


def rotation_z(degrees: float) -> np.ndarray:
    a = np.deg2rad(degrees)
    return np.array([[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1]])


def anipose_frame(rng, n_frames=6, M=None, center=None):
    """Return (DataFrame as anipose writes it, raw points (T, K, 3), aligned points)."""
    M = np.eye(3) if M is None else M
    center = np.zeros(3) if center is None else center
    raw = rng.normal(0, 30, (n_frames, len(KEYPOINTS), 3))
    raw[2, 1] = np.nan  # left_ear not triangulated in frame 2
    aligned = raw @ M.T - center  # anipose: all_points_3d.dot(M.T) - center
    scores = rng.uniform(0, 1, (n_frames, len(KEYPOINTS)))
    out = pd.DataFrame()
    for k, kp in enumerate(KEYPOINTS):
        for a, axis in enumerate("xyz"):
            out[f"{kp}_{axis}"] = aligned[:, k, a]
        out[f"{kp}_error"] = rng.uniform(0, 3, n_frames)
        out[f"{kp}_ncams"] = 3.0
        out[f"{kp}_score"] = scores[:, k]
    for i in range(3):
        for j in range(3):
            out[f"M_{i}{j}"] = M[i, j]
    for i in range(3):
        out[f"center_{i}"] = center[i]
    out["fnum"] = np.arange(n_frames)
    return out, raw, aligned, scores


def write(df: pd.DataFrame, path: Path) -> Path:
    df.to_csv(path, index=False)
    return path


def test_anipose_csv_is_read_value_by_value_in_file_order(tmp_path: Path, rng) -> None:
    df, _, aligned, scores = anipose_frame(rng)
    path = write(df, tmp_path / "trial1.csv")
    assert anipose.sniff(path)
    ds = read_tracks(path, fps=100, unit="mm")
    assert ds.attrs["source_format"] == "anipose"
    assert list(ds.keypoint.values) == list(KEYPOINTS)
    want = aligned.transpose(0, 2, 1)[..., np.newaxis].astype(np.float32)
    np.testing.assert_array_equal(ds.position.values, want)
    np.testing.assert_array_equal(ds.confidence.values[..., 0], scores.astype(np.float32))
    np.testing.assert_allclose(ds.time.values, np.arange(6) / 100)
    assert ds.attrs["unit"] == "mm" and ds.attrs["alignment"] == "anipose"


def test_unit_is_unknown_unless_given(tmp_path: Path, rng) -> None:
    df, *_ = anipose_frame(rng)
    ds = anipose.read(write(df, tmp_path / "t.csv"), fps=100)
    assert ds.attrs["unit"] == "unknown" and ds.attrs["up_axis"] is None


def test_undo_alignment_recovers_the_triangulated_points(tmp_path: Path, rng) -> None:
    M = rotation_z(30.0) @ np.array([[1, 0, 0], [0, 0, -1], [0, 1, 0]])
    center = np.array([12.0, -4.0, 7.5])
    df, raw, _, _ = anipose_frame(rng, M=M, center=center)
    path = write(df, tmp_path / "aligned.csv")
    ds = anipose.read(path, fps=100, undo_alignment=True)
    want = raw.transpose(0, 2, 1)[..., np.newaxis]
    np.testing.assert_allclose(ds.position.values, want, rtol=1e-5, atol=1e-4)
    assert ds.attrs["alignment"] == "undone"
    np.testing.assert_allclose(ds.attrs["anipose_M"], M)
    np.testing.assert_allclose(ds.attrs["anipose_center"], center)


def test_fnum_gives_the_time(tmp_path: Path, rng) -> None:
    df, *_ = anipose_frame(rng)
    df["fnum"] = np.arange(50, 56)
    ds = anipose.read(write(df, tmp_path / "late.csv"), fps=25)
    np.testing.assert_allclose(ds.time.values, np.arange(50, 56) / 25)


def test_missing_header_row_fails(tmp_path: Path, rng) -> None:
    df, *_ = anipose_frame(rng)
    path = tmp_path / "headless.csv"
    df.to_csv(path, index=False, header=False)
    with pytest.raises(TracksError, match=r"headless\.csv: unexpected column '.*'; an Anipose"):
        anipose.read(path, fps=30)


def test_keypoint_without_z_fails(tmp_path: Path, rng) -> None:
    df, *_ = anipose_frame(rng)
    path = write(df.drop(columns=["left_ear_z"]), tmp_path / "no_z.csv")
    with pytest.raises(
        TracksError, match=r"keypoint 'left_ear' lacks the column\(s\) \['left_ear_z'\]"
    ):
        anipose.read(path, fps=30)


def test_wrong_column_count_fails(tmp_path: Path, rng) -> None:
    df, *_ = anipose_frame(rng)
    lines = write(df, tmp_path / "ok.csv").read_text().splitlines()
    lines[3] += ",1.0"
    path = tmp_path / "extra.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TracksError, match=r"extra\.csv: line 4 has 32 fields, the header has 31"):
        anipose.read(path, fps=30)


def test_truncated_file_fails(tmp_path: Path, rng) -> None:
    df, *_ = anipose_frame(rng)
    text = write(df, tmp_path / "ok.csv").read_text()
    path = tmp_path / "cut.csv"
    path.write_text(text[: len(text) - 40])
    with pytest.raises(TracksError, match=r"cut\.csv: line 7 has \d+ fields.*truncated"):
        anipose.read(path, fps=30)


def test_changing_alignment_matrix_fails(tmp_path: Path, rng) -> None:
    df, *_ = anipose_frame(rng)
    df.loc[3, "M_01"] = 0.5
    with pytest.raises(TracksError, match=r"M_\* and center_\* change between rows"):
        anipose.read(write(df, tmp_path / "m.csv"), fps=30)


def test_unknown_keypoint_in_the_map_and_missing_fps_fail(tmp_path: Path, rng) -> None:
    df, *_ = anipose_frame(rng)
    path = write(df, tmp_path / "t.csv")
    renamed = read_tracks(path, format="anipose", fps=30, keypoint_map={"tail_base": "tailbase"})
    assert list(renamed.keypoint.values) == ["nose", "left_ear", "tailbase"]
    with pytest.raises(TracksError, match=r"\['ear'\] that the file does not have.*'left_ear'"):
        read_tracks(path, format="anipose", fps=30, keypoint_map={"ear": "left_ear"})
    with pytest.raises(TracksError, match=r"t\.csv: the frame rate is unknown: Anipose"):
        anipose.read(path)


def test_movement_loader_agrees(tmp_path: Path, rng) -> None:
    load_poses = pytest.importorskip(
        "movement.io.load_poses", reason="movement (the optional interop extra) is not installed"
    )
    df, *_ = anipose_frame(rng)
    path = write(df, tmp_path / "trial.csv")
    theirs = load_poses.from_anipose_file(path, fps=30)
    assert_same_tracks(anipose.read(path, fps=30), theirs, individuals=False)
