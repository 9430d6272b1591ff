"""Fixtures of the store tests."""

import numpy as np
import pytest

from pipeline.tracks import make_tracks_dataset


@pytest.fixture
def tracks(rng):
    """50 frames, 4 keypoints, 2 individuals; keypoint c of m2 missing in frames 10-19."""
    position = rng.normal(size=(50, 3, 4, 2)).astype(np.float32)
    position[10:20, :, 2, 1] = np.nan
    return make_tracks_dataset(
        position,
        rng.uniform(size=(50, 4, 2)),
        keypoints=["a", "b", "c", "d"],
        individuals=["m1", "m2"],
        fps=30.0,
        source_software="test",
        session="s1",
        unit="mm",
        up_axis="z",
    )
