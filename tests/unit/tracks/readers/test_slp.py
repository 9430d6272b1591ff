"""SLEAP ``.slp`` files written with sleap-io (the optional extra ``sleap``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pipeline.tracks import TracksError, read_tracks

sio = pytest.importorskip("sleap_io", reason=".slp files need sleap-io: the 'sleap' extra")

from pipeline.tracks.readers import slp  # noqa: E402

NODES = ("head", "thorax", "abdomen")


def project(rng, *, tracked: bool = True, videos: int = 1):
    """Frames 0, 1 and 3 of two flies: predictions everywhere, a hand label on frame 1."""
    skeleton = sio.Skeleton(list(NODES))
    tracks = [sio.Track("fly_a"), sio.Track("fly_b")] if tracked else []
    movies = [sio.Video(f"movie{i}.mp4", open_backend=False) for i in range(videos)]
    truth = {}
    frames = []
    for video in movies:
        for frame in (0, 1, 3):
            instances = []
            for t in range(2):
                xy = rng.uniform(0, 500, (len(NODES), 2))
                scores = rng.uniform(0, 1, len(NODES))
                xy[2] = np.nan if frame == 3 and t == 1 else xy[2]  # an occluded point
                track = tracks[t] if tracked else None
                instances.append(
                    sio.PredictedInstance.from_numpy(
                        xy, skeleton, point_scores=scores, score=0.9, track=track
                    )
                )
                truth[(video.filename, frame, t)] = (xy, scores)
            if frame == 1:
                user = rng.uniform(0, 500, (len(NODES), 2))
                instances.append(
                    sio.Instance.from_numpy(user, skeleton, track=tracks[0] if tracked else None)
                )
                truth[(video.filename, frame, "user")] = (user, np.ones(len(NODES)))
            frames.append(sio.LabeledFrame(video=video, frame_idx=frame, instances=instances))
    labels = sio.Labels(labeled_frames=frames, videos=movies, skeletons=[skeleton], tracks=tracks)
    return labels, truth


def save(labels, path: Path) -> Path:
    sio.save_slp(labels, str(path))
    return path


def test_tracked_predictions_and_a_user_label(tmp_path: Path, rng) -> None:
    labels, truth = project(rng)
    path = save(labels, tmp_path / "flies.slp")
    assert slp.sniff(path) and not slp.sniff(tmp_path)
    ds = read_tracks(path, fps=50)
    assert ds.attrs["source_format"] == "slp" and ds.attrs["fps"] == 50
    assert (ds.attrs["unit"], ds.attrs["up_axis"]) == ("px", "-y")
    assert list(ds.keypoint.values) == list(NODES)
    assert list(ds.individual.values) == ["fly_a", "fly_b"]
    np.testing.assert_allclose(ds.time.values, np.arange(4) / 50)
    pos, conf = ds.position.values, ds.confidence.values
    for frame in (0, 3):
        for t in range(2):
            xy, scores = truth[("movie0.mp4", frame, t)]
            np.testing.assert_allclose(pos[frame, :, :, t], xy.T, rtol=1e-6)
            np.testing.assert_allclose(conf[frame, :, t], scores, rtol=1e-6)
    user, _ = truth[("movie0.mp4", 1, "user")]
    np.testing.assert_allclose(pos[1, :, :, 0], user.T, rtol=1e-6)  # hand label wins
    np.testing.assert_array_equal(conf[1, :, 0], 1.0)
    assert np.isnan(pos[2]).all()  # no labels on frame 2
    predicted, _ = truth[("movie0.mp4", 1, 0)]
    only = read_tracks(path, fps=50, user_instances=False)
    np.testing.assert_allclose(only.position.values[1, :, :, 0], predicted.T, rtol=1e-6)
    assert (ds.attrs["n_user_instances"], ds.attrs["n_predicted_instances"]) == (1, 6)


def test_untracked_instances_are_numbered(tmp_path: Path, rng) -> None:
    labels, truth = project(rng, tracked=False)
    ds = read_tracks(save(labels, tmp_path / "u.slp"), fps=50)
    assert list(ds.individual.values)[:2] == ["instance_0", "instance_1"]
    xy, _ = truth[("movie0.mp4", 0, 0)]
    np.testing.assert_allclose(ds.position.values[0, :, :, 0], xy.T, rtol=1e-6)


def test_several_videos_need_a_choice(tmp_path: Path, rng) -> None:
    labels, truth = project(rng, videos=2)
    path = save(labels, tmp_path / "two.slp")
    with pytest.raises(TracksError, match=r"two.slp: the file labels 2 videos; pass video="):
        read_tracks(path, fps=50)
    for choice in (1, "movie1.mp4"):
        ds = read_tracks(path, fps=50, video=choice)
        xy, _ = truth[("movie1.mp4", 0, 1)]
        np.testing.assert_allclose(ds.position.values[0, :, :, 1], xy.T, rtol=1e-6)
        assert ds.attrs["video"] == "movie1.mp4"
    with pytest.raises(TracksError, match=r"option 'video': 'movie9.mp4' is not one of"):
        read_tracks(path, fps=50, video="movie9.mp4")


def test_missing_fps_and_corrupt_files_fail_clearly(tmp_path: Path, rng) -> None:
    labels, _ = project(rng)
    path = save(labels, tmp_path / "f.slp")
    with pytest.raises(TracksError, match=r"f.slp: the frame rate is unknown: SLEAP"):
        read_tracks(path)
    cut = tmp_path / "cut.slp"
    cut.write_bytes(path.read_bytes()[:4000])
    with pytest.raises(TracksError, match=r"cut.slp: "):
        read_tracks(cut, fps=30, format="slp")
