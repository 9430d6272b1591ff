"""session_rms: the archive summary's median keypoint RMS of a fit store."""

import numpy as np
import zarr

from pipeline.archive.summary import session_rms
from pipeline.bodyplan import load_body_plan
from pipeline.fit import fit_session
from pipeline.solve import SolverConfig
from pipeline.store import write_tracks
from pipeline.store.fit import open_fit
from pipeline.synth import SynthConfig, synthesize


def test_median_rms_over_frames_and_individuals_and_none_when_all_missing(fly_plan_path, tmp_path):
    plan = load_body_plan(fly_plan_path)
    config = SynthConfig(n_frames=60, n_individuals=2, noise=0.01)
    synth = synthesize(plan, config, np.random.default_rng(3))
    tracks = write_tracks(synth.tracks, tmp_path / "s.zarr", 32)
    out = tmp_path / "fit.zarr"
    fit_session(tracks, plan, SolverConfig(n_iterations=3), out, chunk_frames=32)
    rms = open_fit(out)["rms_error"].values.astype(np.float64)
    assert rms.shape == (60, 2) and np.isfinite(rms).all()
    assert session_rms(out) == float(np.median(rms))
    array = zarr.open_group(str(out), mode="r+")["rms_error"]
    array[:30] = np.nan  # missing frames do not count
    assert session_rms(out) == float(np.median(rms[30:]))
    array[...] = np.nan
    assert session_rms(out) is None
