"""stop_reason from the solver to the fit store and the archive summary."""

import numpy as np
import zarr

from pipeline.archive.summary import ArchiveSummary, SessionOutcome, stop_reason_counts
from pipeline.bodyplan import load_body_plan
from pipeline.fit import fit_session
from pipeline.solve import SolverConfig
from pipeline.solve.rules import MAX_ITERATIONS, STOP_REASONS
from pipeline.store import write_tracks
from pipeline.store.fit import SCHEMA_VERSION, open_fit
from pipeline.synth import SynthConfig, synthesize


def test_stop_reasons_reach_the_store_and_are_counted(fly_plan_path, tmp_path):
    plan = load_body_plan(fly_plan_path)
    synth = synthesize(plan, SynthConfig(n_frames=40, n_individuals=2), np.random.default_rng(5))
    tracks = write_tracks(synth.tracks, tmp_path / "s.zarr", 20)
    out = tmp_path / "fit.zarr"
    fit_session(tracks, plan, SolverConfig(n_iterations=1), out, chunk_frames=20)
    fit = open_fit(out)
    assert fit.attrs["schema_version"] == SCHEMA_VERSION == 3
    reason = fit["stop_reason"].values
    assert reason.shape == (40, 2) and (reason == MAX_ITERATIONS).all()  # one step: the cap
    assert np.isfinite(fit["objective"].values).all()
    counts = stop_reason_counts(out)
    assert list(counts) == list(STOP_REASONS) and counts["max_iterations"] == 80
    summary = ArchiveSummary((SessionOutcome("s", "fitted", stop_reasons=counts),) * 2)
    assert summary.to_dict()["stop_reasons"]["max_iterations"] == 160
    markdown = summary.to_markdown()
    assert "stop reason" in markdown and "max_iterations" in markdown and "160" in markdown


def test_a_store_from_before_stop_reason_still_opens(fly_plan_path, tmp_path):
    plan = load_body_plan(fly_plan_path)
    synth = synthesize(plan, SynthConfig(n_frames=20, n_individuals=1), np.random.default_rng(6))
    tracks = write_tracks(synth.tracks, tmp_path / "s.zarr", 20)
    out = tmp_path / "fit.zarr"
    fit_session(tracks, plan, SolverConfig(), out)
    group = zarr.open_group(str(out), mode="r+")
    for name in ("stop_reason", "objective"):  # what a schema-1 store lacks
        del group[name]
    group.attrs["schema_version"] = 1
    fit = open_fit(out)
    assert "stop_reason" not in fit and fit["converged"].values.all()
    assert stop_reason_counts(out) is None
