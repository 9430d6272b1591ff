"""The share of confident keypoint observations, and the warning when it is small."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pipeline.fit.observed import ObservationWarning, observed, warn_if_empty
from pipeline.tracks import make_tracks_dataset, read_tracks
from tests.fixtures.shared_data import SHARED


def _ds(confidence):
    confidence = np.asarray(confidence, dtype=np.float32)  # (time, keypoint)
    t, k = confidence.shape
    pos = np.zeros((t, 3, k, 1), dtype=np.float32)
    return make_tracks_dataset(
        pos,
        confidence[..., None],
        keypoints=[f"k{i}" for i in range(k)],
        fps=10.0,
        source_software="test",
    )


def test_fractions_count_confident_finite_observations():
    ds = _ds([[0.9, 0.01], [0.9, 0.9], [0.0, 0.0], [np.nan, 0.9]])
    seen = observed(ds, [0, 1], min_confidence=0.0)
    assert seen.keypoints == pytest.approx(5 / 8)  # NaN confidence: no score, counted
    assert seen.frames == pytest.approx(3 / 4)
    assert observed(ds, [0, 1], min_confidence=0.95).keypoints == pytest.approx(1 / 8)


def test_a_mostly_unconfident_session_warns_with_the_fractions():
    ds = _ds([[0.01, 0.01], [0.9, 0.01]])
    with pytest.warns(ObservationWarning, match=r"s\.zarr: only 25\.0% .* 50\.0% of frames"):
        warn_if_empty(observed(ds, [0, 1], 0.0), "s.zarr", 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_if_empty(observed(_ds([[0.9, 0.9]]), [0, 1], 0.0), "s.zarr", 0.0)


def test_mouse_single_has_fewer_than_5_percent_confident():
    ds = read_tracks(SHARED / "data/realdata/dlc/mouse_single.csv", fps=30)
    seen = observed(ds, range(ds.sizes["keypoint"]), 0.0)
    assert seen.keypoints < 0.05
    with pytest.warns(ObservationWarning, match="no frame has any"):
        warn_if_empty(seen, "mouse_single", 0.0)


@pytest.mark.parametrize("min_confidence", [0.0, 0.5, 0.95])
def test_the_input_scan_counts_what_observed_counts(tmp_path, min_confidence):
    """The fit counts the observations in its one pass over the data (the input scan);
    it must give the fractions of :func:`observed` on the same store."""
    from pipeline.fit.observed import confidence_level
    from pipeline.provenance.fingerprint import scan_input
    from pipeline.store import open_tracks, write_tracks

    rng = np.random.default_rng(0)
    t, k, i = 700, 4, 2
    pos = rng.normal(size=(t, 3, k, i)).astype(np.float32)
    pos[:, 0][rng.random((t, k, i)) < 0.2] = np.nan  # a coordinate missing: unseen
    conf = rng.uniform(0, 1, (t, k, i)).astype(np.float32)
    conf[rng.random((t, k, i)) < 0.1] = np.nan  # no score
    conf[:50] = 0.0  # frames with nothing confident
    ds = make_tracks_dataset(pos, conf, keypoints=list("abcd"), fps=30.0, source_software="t")
    store = tmp_path / "t.zarr"
    write_tracks(ds, store, chunk_frames=128)
    lazy = open_tracks(store)
    want = observed(lazy, [0, 2, 3], min_confidence)
    level = confidence_level(min_confidence)
    got = scan_input(store, lazy, [0, 2, 3], None, None, level).seen
    assert got == pytest.approx((want.keypoints, want.frames), rel=1e-12)
    assert 0.0 < want.keypoints < 1.0 and 0.0 < want.frames < 1.0
