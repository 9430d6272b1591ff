"""Acceptance 3: a fit stopped part way resumes, fitting only the missing chunks."""

import numpy as np
import pytest
import xarray as xr

from pipeline.bodyplan import load_body_plan
from pipeline.cluster import ClusterConfig, cluster_client
from pipeline.fit import FitError, fit_session
from pipeline.solve import SolverConfig
from pipeline.store import write_tracks
from pipeline.store.atomic import partial_path
from pipeline.store.chunks import chunk_seconds, done_chunks
from pipeline.store.fit import FitStoreError, open_fit
from pipeline.synth import SynthConfig, synthesize
from tests.fixtures.faults import FailChunks


@pytest.fixture(scope="module")
def plan(fly_plan_path):
    return load_body_plan(fly_plan_path)


@pytest.fixture(scope="module")
def tracks(plan, tmp_path_factory):
    synth = synthesize(
        plan,
        SynthConfig(n_frames=400, n_individuals=2, noise=0.002, dropout=0.02),
        np.random.default_rng(11),
    )
    return write_tracks(synth.tracks, tmp_path_factory.mktemp("tracks") / "t.zarr", 100)


@pytest.fixture(scope="module")
def uninterrupted(plan, tracks, tmp_path_factory):
    out = tmp_path_factory.mktemp("reference") / "fit.zarr"
    fit_session(tracks, plan, SolverConfig(), out)
    return open_fit(out).drop_attrs().load()


@pytest.fixture(scope="module")
def client():
    with cluster_client(ClusterConfig(n_workers=2)) as client:
        yield client


@pytest.mark.slow
def test_failed_chunk_is_refitted_alone_on_rerun(plan, tracks, uninterrupted, client, tmp_path):
    """Two workers; chunk task 2 fails once (a fault wrapper sent to the workers)."""
    out = tmp_path / "fit.zarr"
    faulty = FailChunks.of([2], once_dir=tmp_path)
    with pytest.raises(FitError, match=r"1 of 4 chunks failed \(\[2\]\).*rerun to resume"):
        fit_session(tracks, plan, SolverConfig(), out, client=client, chunk_task=faulty)
    partial = partial_path(out)
    assert not out.exists() and partial.is_dir()
    np.testing.assert_array_equal(done_chunks(partial), [True, True, False, True])
    before = chunk_seconds(partial)
    with pytest.raises(FitStoreError, match="incomplete; rerun the fit"):
        open_fit(partial)

    report = fit_session(tracks, plan, SolverConfig(), out, client=client, chunk_task=faulty)
    assert report.chunks_fitted == (2,)
    assert not partial.exists()
    after = open_fit(out)
    np.testing.assert_array_equal(after.attrs["timings"]["chunks_this_run"], 1)
    xr.testing.assert_identical(after.drop_attrs().load(), uninterrupted)
    np.testing.assert_array_equal(chunk_seconds(out)[[0, 1, 3]], before[[0, 1, 3]])


def test_in_process_resume(plan, tracks, uninterrupted, tmp_path):
    out = tmp_path / "fit.zarr"
    faulty = FailChunks.of([0, 3], once_dir=tmp_path)
    with pytest.raises(FitError, match=r"2 of 4 chunks failed \(\[0, 3\]\)"):
        fit_session(tracks, plan, SolverConfig(), out, chunk_task=faulty)
    report = fit_session(tracks, plan, SolverConfig(), out)
    assert report.chunks_fitted == (0, 3)
    xr.testing.assert_identical(open_fit(out).drop_attrs().load(), uninterrupted)


def test_a_partial_store_of_other_inputs_is_not_resumed(plan, tracks, tmp_path):
    out = tmp_path / "fit.zarr"
    with pytest.raises(FitError):
        fit_session(tracks, plan, SolverConfig(), out, chunk_task=FailChunks.of([1]))
    report = fit_session(tracks, plan, SolverConfig(neutral_weight=1e-2), out)
    assert report.chunks_fitted == (0, 1, 2, 3)
    assert open_fit(out).attrs["solver_config"]["neutral_weight"] == 1e-2


def test_a_failed_refit_keeps_the_complete_store(plan, tracks, uninterrupted, tmp_path):
    out = tmp_path / "fit.zarr"
    fit_session(tracks, plan, SolverConfig(), out)
    with pytest.raises(FitError):
        fit_session(tracks, plan, SolverConfig(), out, force=True, chunk_task=FailChunks.of([1]))
    xr.testing.assert_identical(open_fit(out).drop_attrs().load(), uninterrupted)
