"""Fixtures of the reliability suite (imported by its modules: no conftest.py, whose module
name would shadow tests/conftest.py for `from conftest import ...`)."""

from __future__ import annotations

__all__ = ["archive", "fault_session", "fly", "fly_tracks", "small_session", "solver"]

import warnings

import numpy as np
import pytest

from pipeline.bodyplan import load_body_plan
from pipeline.solve import SolverConfig
from pipeline.store import write_tracks
from pipeline.synth import SynthConfig, synthesize


@pytest.fixture(scope="session")
def fly(fly_plan_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_body_plan(fly_plan_path)


@pytest.fixture(scope="session")
def fly_tracks(fly):
    """A 60-frame synthetic fly session (in memory), mm-like plan units."""
    config = SynthConfig(n_frames=60, noise=0.002, dropout=0.02)
    return synthesize(fly, config, np.random.default_rng(5), session="s1").tracks


@pytest.fixture
def archive(tmp_path, fly_tracks):
    """An output folder holding one valid tracks store ``t.zarr`` (chunks of 20 frames)."""
    write_tracks(fly_tracks, tmp_path / "t.zarr", chunk_frames=20)
    return tmp_path


@pytest.fixture(scope="session")
def solver():
    return SolverConfig()


#: The fault tests' session: 300 frames in 12 chunks of 25 (one task each).
FAULT_FRAMES, FAULT_CHUNK = 300, 25


def _session(fly, tmp_path_factory, name: str, n_frames: int, chunk: int, seed: int):
    """(tracks store, uninterrupted in-process fit), cached under the session's base temp
    folder so that every module importing the fixture reuses them."""
    from pipeline.fit import fit_session
    from pipeline.store.fit_store import open_fit

    folder = tmp_path_factory.getbasetemp() / name
    tracks, reference = folder / "t.zarr", folder / "reference.zarr"
    if not reference.exists():
        folder.mkdir(exist_ok=True)
        config = SynthConfig(n_frames=n_frames, noise=0.002, dropout=0.02)
        synth = synthesize(fly, config, np.random.default_rng(seed), session=name)
        write_tracks(synth.tracks, tracks, chunk_frames=chunk)
        fit_session(tracks, fly, SolverConfig(), reference)
    return tracks, open_fit(reference).drop_attrs().load()


@pytest.fixture(scope="session")
def fault_session(fly, tmp_path_factory):
    """The multi-process fault tests' session: 300 frames in 12 chunks of 25."""
    return _session(fly, tmp_path_factory, "fault-session", FAULT_FRAMES, FAULT_CHUNK, 21)


@pytest.fixture(scope="session")
def small_session(fly, tmp_path_factory):
    """A session of 60 frames in 3 chunks of 20, for the in-process fault tests."""
    return _session(fly, tmp_path_factory, "small-session", 60, 20, 22)


def same_fit(out, reference) -> None:
    """The fit store ``out`` holds exactly the uninterrupted fit ``reference``."""
    import xarray as xr

    from pipeline.store.fit_store import open_fit

    xr.testing.assert_identical(open_fit(out).drop_attrs().load(), reference)
