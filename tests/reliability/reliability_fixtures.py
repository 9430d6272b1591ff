"""Fixtures of the reliability suite (imported by its modules: no conftest.py, whose module
name would shadow tests/conftest.py for `from conftest import ...`)."""

from __future__ import annotations

__all__ = ["archive", "fly", "fly_tracks", "solver"]

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
