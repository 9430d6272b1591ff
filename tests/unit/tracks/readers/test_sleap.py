"""SLEAP analysis HDF5 files written with h5py in SLEAP's own (MATLAB-ordered) layout."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest

from pipeline.tracks import TracksError, read_tracks
from pipeline.tracks.readers import sleap
from tests.fixtures.readers_interop import assert_same_tracks

NODES = ("head", "thorax", "abdomen")
TRACKS = ("female", "male")


def poses(rng: np.random.Generator, n_frames: int = 7, n_tracks: int = 2):
    """Return (position (frame, xy, node, track), scores (frame, node, track))."""
    position = rng.uniform(0, 1024, (n_frames, 2, len(NODES), n_tracks))
    scores = rng.uniform(0, 1, (n_frames, len(NODES), n_tracks))
    position[3, :, 1, 0] = np.nan  # thorax of the female not found in frame 3
    scores[3, 1, 0] = np.nan
    return position, scores


def write_analysis(path: Path, position, scores, *, tracks=TRACKS, names_as=np.bytes_) -> None:
    """Write the file as SLEAP's "Export Analysis HDF5" does (MATLAB, column-major)."""
    n_frames, n_tracks = position.shape[0], position.shape[-1]
    with h5py.File(path, "w") as f:
        f["tracks"] = position.transpose(3, 1, 2, 0)  # (n_tracks, 2, n_nodes, n_frames)
        if scores is not None:
            f["point_scores"] = scores.transpose(2, 1, 0)  # (n_tracks, n_nodes, n_frames)
        f["instance_scores"] = np.ones((n_tracks, n_frames))
        f["track_occupancy"] = np.ones((n_frames, n_tracks), dtype=np.uint8)
        f["node_names"] = np.array([names_as(n) for n in NODES])
        f["track_names"] = np.array([names_as(t) for t in tracks], dtype=np.bytes_)
        f["edge_names"] = np.array([[b"head", b"thorax"], [b"thorax", b"abdomen"]])
        f["video_path"] = "fly.mp4"


def test_analysis_file_is_read_value_by_value(tmp_path: Path, rng) -> None:
    position, scores = poses(rng)
    path = tmp_path / "session.analysis.h5"
    write_analysis(path, position, scores)
    assert sleap.sniff(path)
    ds = read_tracks(path, fps=150)
    assert ds.attrs["source_format"] == "sleap"
    assert list(ds.keypoint.values) == list(NODES)
    assert list(ds.individual.values) == list(TRACKS)
    np.testing.assert_array_equal(ds.position.values, position.astype(np.float32))
    np.testing.assert_array_equal(ds.confidence.values, scores.astype(np.float32))
    np.testing.assert_allclose(ds.time.values, np.arange(7) / 150)
    assert (ds.attrs["unit"], ds.attrs["up_axis"], ds.attrs["source_software"]) == (
        "px",
        "-y",
        "SLEAP",
    )


def test_standard_preset_follows_the_dims_attribute(tmp_path: Path, rng) -> None:
    position, scores = poses(rng)
    path = tmp_path / "standard.h5"
    with h5py.File(path, "w") as f:
        f["tracks"] = position.transpose(0, 3, 2, 1)  # (frame, track, node, xy)
        f["tracks"].attrs["dims"] = json.dumps(["frame", "track", "node", "xy"])
        f["point_scores"] = scores.transpose(0, 2, 1)  # (frame, track, node)
        f["point_scores"].attrs["dims"] = json.dumps(["frame", "track", "node"])
        f["node_names"] = np.array(list(NODES), dtype=h5py.string_dtype())
        f["track_names"] = np.array(list(TRACKS), dtype=h5py.string_dtype())
        f.attrs["preset"] = "standard"
    ds = sleap.read(path, fps=30)
    np.testing.assert_array_equal(ds.position.values, position.astype(np.float32))
    np.testing.assert_array_equal(ds.confidence.values, scores.astype(np.float32))


def test_untracked_file_is_one_individual_without_scores(tmp_path: Path, rng) -> None:
    position, _ = poses(rng, n_tracks=1)
    path = tmp_path / "single.h5"
    write_analysis(path, position, None, tracks=())
    ds = sleap.read(path, fps=30)
    assert ds.sizes["individual"] == 1
    np.testing.assert_array_equal(ds.position.values, position.astype(np.float32))
    assert np.isnan(ds.confidence.values).all()


def test_names_shape_mismatch_fails(tmp_path: Path, rng) -> None:
    position, scores = poses(rng)
    path = tmp_path / "three_names.h5"
    write_analysis(path, position, scores, tracks=("a", "b", "c"))
    with pytest.raises(TracksError, match=r"three_names\.h5: tracks: shape \(2, 2, 3, 7\)"):
        sleap.read(path, fps=30)


def test_point_scores_of_the_wrong_shape_fail(tmp_path: Path, rng) -> None:
    position, scores = poses(rng)
    path = tmp_path / "bad_scores.h5"
    write_analysis(path, position, scores[:5])
    with pytest.raises(TracksError, match=r"point_scores has shape \(5, 3, 2\)"):
        sleap.read(path, fps=30)


def test_missing_tracks_dataset_fails_listing_the_datasets(tmp_path: Path) -> None:
    path = tmp_path / "other.h5"
    with h5py.File(path, "w") as f:
        f["node_names"] = np.array([b"a"])
    assert not sleap.sniff(path)
    with pytest.raises(TracksError, match=r"no dataset\(s\) \['tracks'\]; its datasets: \['node"):
        sleap.read(path, fps=30)


def test_truncated_file_fails(tmp_path: Path, rng) -> None:
    position, scores = poses(rng, n_frames=200)
    path = tmp_path / "cut.h5"
    write_analysis(path, position, scores)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(TracksError, match=r"cut\.h5: not a readable HDF5 file \(truncated"):
        sleap.read(path, fps=30)


def test_unknown_keypoint_in_the_map_and_missing_fps_fail(tmp_path: Path, rng) -> None:
    position, scores = poses(rng)
    path = tmp_path / "s.h5"
    write_analysis(path, position, scores)
    with pytest.raises(TracksError, match=r"keypoint map names keypoint\(s\) \['wing'\]"):
        read_tracks(path, format="sleap", fps=30, keypoint_map={"wing": "wing_l"})
    with pytest.raises(TracksError, match=r"s\.h5: the frame rate is unknown: SLEAP"):
        sleap.read(path)


def test_movement_loader_agrees(tmp_path: Path, rng) -> None:
    load_poses = pytest.importorskip(
        "movement.io.load_poses", reason="movement (the optional interop extra) is not installed"
    )
    position, scores = poses(rng)
    path = tmp_path / "pair.analysis.h5"
    write_analysis(path, position, scores)
    assert_same_tracks(sleap.read(path, fps=30), load_poses.from_sleap_file(path, fps=30))
