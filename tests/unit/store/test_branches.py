"""Chunks written on different branches come out on one: the turns chained across seams."""

from __future__ import annotations

import numpy as np
import pytest
import zarr

from pipeline.store.branches import TWO_PI, align_chunk_turns
from pipeline.store.fit import MARKERS, FitLayout, create_fit_store
from pipeline.store.seams import TAIL

CHUNK, OVERLAP, N_CHUNKS = 10, 3, 6
N = CHUNK * N_CHUNKS - 4  # a short last chunk
#: the spinning coordinate (0), one with limits a turn would leave (1), a steady one (2)
LOWER = np.array([-np.inf, -1.0, -np.inf])
UPPER = np.array([np.inf, 7.0, np.inf])


def _truth() -> np.ndarray:
    """``(time, individual, dof)``: one continuous branch, spinning past several turns."""
    t = np.arange(N, dtype=np.float64)
    spin = np.stack([0.9 * t, -0.7 * t], axis=1)  # rad; two individuals spin apart
    inside = np.stack([0.5 + 0.1 * t, 0.2 + 0.1 * t], axis=1)  # within [-1, 7]
    steady = np.stack([0.1 + 0 * t, -0.2 + 0 * t], axis=1)
    return np.stack([spin, inside, steady], axis=-1)


def _written(truth: np.ndarray, layout: FitLayout) -> np.ndarray:
    """Each chunk as a chunk task stores it: its first frame within a half turn of 0."""
    out = truth.copy()
    for k in range(layout.n_chunks):
        start, stop = layout.bounds(k)
        turns = np.rint(truth[start] / TWO_PI)
        turns[:, 1:] = 0  # the bounded and steady coordinates: on the truth's branch
        out[start:stop] -= TWO_PI * turns
    # a chunk that starts more than a half turn above the one before, inside its limits,
    # and ends where the turn down would take it below -1: the turn is not taken
    out[20:30, 0, 1] = np.linspace(5.6, 5.0, 10)
    return out


@pytest.fixture(params=[True, False], ids=["tails", "no tails"])
def store(request, tmp_path):
    layout = FitLayout(
        time=np.arange(N) / 100.0,
        individuals=("a", "b"),
        joints=("j",),
        dofs=("spin", "bounded", "steady"),
        chunk_frames=CHUNK,
        overlap_frames=OVERLAP,
    )
    path = create_fit_store(tmp_path / "fit.zarr", layout, {})
    truth = _truth()
    written = _written(truth, layout)
    group = zarr.open_group(str(path), mode="r+", zarr_format=3)
    group["dof_value"][...] = written
    markers = group[MARKERS]
    seam = group["seam_dof_value"]
    for k in range(layout.n_chunks):
        start, stop = layout.bounds(k)
        offset = written[start] - truth[start]  # the chunk's own branch
        warm = truth[max(start - OVERLAP, 0) : start] + offset
        seam[k] = np.concatenate([np.full((OVERLAP - len(warm), 2, 3), np.nan), warm])
        markers[TAIL][k] = written[stop - OVERLAP : stop]
    if not request.param:  # a store made before tails existed
        del markers[TAIL]
    return path, layout, truth, written


def _align(path, layout) -> int:
    return align_chunk_turns(path, layout, np.ones(3, bool), LOWER, UPPER)


def test_every_chunk_lands_on_the_branch_of_the_one_before(store):
    path, layout, truth, written = store
    turned = _align(path, layout)
    stored = np.asarray(zarr.open_group(str(path), mode="r")["dof_value"][...])
    assert turned == layout.n_chunks - 1  # chunk 0 sets the branch; every other spun off it
    expected = truth - TWO_PI * np.rint(truth[0] / TWO_PI)  # chunk 0's branch, continued
    expected[20:30, 0, 1] = written[20:30, 0, 1]  # the turn would leave [-1, 7]: kept
    np.testing.assert_allclose(stored, expected, atol=1e-12)
    assert np.all(np.abs(np.diff(stored[:, :, 0], axis=0)) < np.pi)


def test_warm_ups_and_tails_turn_with_their_chunk(store):
    path, layout, _, _ = store
    _align(path, layout)
    group = zarr.open_group(str(path), mode="r")
    stored = np.asarray(group["dof_value"][...])
    seam = np.asarray(group["seam_dof_value"][...])
    for k in range(1, layout.n_chunks):
        start, stop = layout.bounds(k)
        # the warm-up solved the frames before the seam: now on the stored branch there
        np.testing.assert_allclose(seam[k][:, :, 0], stored[start - OVERLAP : start, :, 0])
        if TAIL in group[MARKERS]:
            np.testing.assert_array_equal(group[MARKERS][TAIL][k], stored[stop - OVERLAP : stop])


def test_aligning_again_changes_nothing(store):
    path, layout, _, _ = store
    _align(path, layout)
    before = np.asarray(zarr.open_group(str(path), mode="r")["dof_value"][...])
    assert _align(path, layout) == 0
    np.testing.assert_array_equal(zarr.open_group(str(path), mode="r")["dof_value"][...], before)


def test_a_seam_frame_without_a_value_turns_nothing(store):
    path, layout, _, written = store
    group = zarr.open_group(str(path), mode="r+", zarr_format=3)
    group["dof_value"][CHUNK] = np.nan  # chunk 1's first frame
    _align(path, layout)
    stored = np.asarray(group["dof_value"][CHUNK + 1 : 2 * CHUNK])
    np.testing.assert_array_equal(stored, written[CHUNK + 1 : 2 * CHUNK])
