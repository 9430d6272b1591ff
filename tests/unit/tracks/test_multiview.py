"""The multi-view tracks contract: build, validate, store, read back by frames."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.store import open_tracks, write_tracks
from pipeline.store.tracks import read_frames
from pipeline.tracks import TracksError
from pipeline.tracks.multiview import (
    MULTIVIEW_CONFIDENCE_DIMS,
    MULTIVIEW_DIMS,
    make_multiview_dataset,
    session_cameras,
    validate_multiview,
)
from tests.fixtures.multiview_rig import fly_rig


@pytest.fixture
def ds(rng):
    cams = fly_rig(3)
    position = rng.uniform(0, 1000, (50, 3, 2, 4, 2))
    position[3, 1, :, 2, 0] = np.nan
    confidence = rng.uniform(0, 1, (50, 3, 4, 2))
    return make_multiview_dataset(
        position,
        confidence,
        cameras=cams,
        keypoints=["a", "b", "c", "d"],
        individuals=["m1", "m2"],
        fps=50.0,
        frame_offset=[0, 2, 1],
        session="s",
    )


def test_store_round_trip_keeps_values_cameras_and_offsets(ds, tmp_path):
    path = write_tracks(ds, tmp_path / "s.zarr", chunk_frames=16)
    back = open_tracks(path)
    assert back["position"].dims == MULTIVIEW_DIMS
    assert back["confidence"].dims == MULTIVIEW_CONFIDENCE_DIMS
    assert back["position"].chunks[0][0] == 16
    np.testing.assert_array_equal(back["position"].values, ds["position"].values)
    assert back.attrs["frame_offset"] == [0, 2, 1] and back.attrs["unit"] == "px"
    for a, b in zip(session_cameras(back), fly_rig(3), strict=True):
        assert a.allclose(b)
    block = read_frames(path, "position", MULTIVIEW_DIMS, 10, 20)
    np.testing.assert_array_equal(block, ds["position"].values[10:20])
    reordered = read_frames(path, "confidence", ("time", "individual", "view", "keypoint"), 0, 5)
    np.testing.assert_array_equal(reordered, ds["confidence"].values[:5].transpose(0, 3, 1, 2))


def test_problems_are_listed_at_once(ds):
    bad = ds.isel(space=[0]).assign_attrs(frame_offset=[0, 1], fps=-1)
    with pytest.raises(TracksError) as info:
        validate_multiview(bad, "bad.zarr")
    text = str(info.value)
    assert text.startswith("bad.zarr: not a valid multi-view tracks dataset")
    assert "space: multi-view tracks are 2D pixels (x, y), got 1" in text
    assert "attrs.fps: expected a positive number" in text


def test_a_camera_that_does_not_parse(ds):
    cams = [dict(c) for c in ds.attrs["cameras"]]
    cams[1]["rotation"] = [[1, 0, 0], [0, 1, 0], [0, 0, 0]]
    with pytest.raises(TracksError, match=r"camera 'camB': field 'rotation': not a rotation"):
        validate_multiview(ds.assign_attrs(cameras=cams), "x.zarr")
