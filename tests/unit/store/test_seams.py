"""Seam disagreement from the chunks' stored tails equals reading the frames back."""

import numpy as np
import pytest
import zarr

from pipeline.bodyplan import load_body_plan
from pipeline.fit import fit_session
from pipeline.solve import SolverConfig
from pipeline.store import write_tracks
from pipeline.store.fit import MARKERS, FitLayout, open_fit
from pipeline.store.seams import TAIL, seam_disagreement
from pipeline.synth import SynthConfig, synthesize


@pytest.fixture(scope="module")
def fitted(fly_plan_path, tmp_path_factory):
    plan = load_body_plan(fly_plan_path)
    synth = synthesize(plan, SynthConfig(n_frames=130, n_individuals=2), np.random.default_rng(7))
    folder = tmp_path_factory.mktemp("seams")
    tracks = write_tracks(synth.tracks, folder / "s.zarr", 32)
    out = folder / "fit.zarr"
    fit_session(tracks, plan, SolverConfig(n_iterations=3), out, chunk_frames=32, overlap_frames=8)
    return out


def _layout(fit, chunk_frames, overlap):
    return FitLayout(
        time=fit["time"].values,
        individuals=tuple(fit["individual"].values),
        joints=tuple(fit["joint"].values),
        dofs=tuple(fit["dof"].values),
        chunk_frames=chunk_frames,
        overlap_frames=overlap,
    )


def test_tails_give_the_disagreement_of_the_frames_before_each_seam(fitted):
    fit = open_fit(fitted)
    markers = zarr.open_group(fitted, mode="r", zarr_format=3)[MARKERS]
    assert TAIL in markers
    dof = fit["dof_value"].values
    warm = fit["seam_dof_value"].values
    want = np.full((5, 2), np.nan, np.float32)
    for k in range(1, 5):  # by hand: the 8 frames before frame 32 k
        want[k] = np.nanmax(np.abs(warm[k] - dof[32 * k - 8 : 32 * k]), axis=(0, 2))
    assert np.isfinite(want[1:]).all()
    np.testing.assert_array_equal(fit["seam_disagreement"].values, want)
    np.testing.assert_array_equal(seam_disagreement(fitted, _layout(fit, 32, 8), markers), want)


def test_a_store_without_tails_reads_the_frames_back(fitted, tmp_path):
    fit = open_fit(fitted)
    markers = zarr.open_group(fitted, mode="r+", zarr_format=3)[MARKERS]
    tails = np.asarray(markers[TAIL][...])
    del markers[TAIL]  # as a partial store made before tails existed
    try:
        got = seam_disagreement(fitted, _layout(fit, 32, 8), markers)
    finally:
        markers.create_array(TAIL, data=tails, chunks=(1, *tails.shape[1:]))
    np.testing.assert_array_equal(got, fit["seam_disagreement"].values)
