"""``--frames START:STOP``: a slice of a session's frames, or one clear error."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.errors import TracksError
from pipeline.tracks import make_tracks_dataset
from pipeline.tracks.frame_range import parse_frames, select_frames


@pytest.mark.parametrize(
    ("spec", "expected"), [("0:5", (0, 5)), ("3:", (3, None)), (":2", (None, 2))]
)
def test_parse(spec, expected):
    assert parse_frames(spec) == expected


@pytest.mark.parametrize("spec", ["5", "a:b", "1:2:3"])
def test_bad_ranges_name_the_form(spec):
    with pytest.raises(TracksError, match="not a frame range START:STOP"):
        parse_frames(spec)


def test_select_keeps_times_and_attrs():
    ds = make_tracks_dataset(
        np.zeros((10, 3, 1, 1), np.float32), None, keypoints=["a"], fps=10.0, source_software="t"
    )
    out = select_frames(ds, "2:5", "s")
    np.testing.assert_allclose(out["time"], [0.2, 0.3, 0.4])
    assert out.attrs == ds.attrs
    with pytest.raises(TracksError, match="s: --frames 20: selects no frame of its 10 frames"):
        select_frames(ds, "20:", "s")
