"""A tiny real archive, built once per test session: two fitted sessions in a fits folder.

Layout (``tmp/archive``)::

    tracks/walk.zarr, tracks/hop.zarr     tracks stores (inputs)
    fits/walk.zarr                        mannequin, 2 individuals, 200 frames, 2 chunks
    fits/lab_b/hop.zarr                   fly, 1 individual, 120 frames, 2 chunks

``walk`` has noise, dropouts and outliers (so some frames fail and some DOFs hit limits);
``hop`` is clean. Tests that change files copy the archive first (``archive_copy``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from pipeline.bodyplan import load_body_plan, mannequin
from pipeline.fit import fit_session
from pipeline.solve import SolverConfig
from pipeline.store import write_tracks
from pipeline.synth import SynthConfig, synthesize


def _session(plan, config, seed, name, root: Path, fit_path: Path, up_axis: str) -> None:
    synth = synthesize(plan, config, np.random.default_rng(seed), session=name)
    tracks = synth.tracks.assign_attrs(up_axis=up_axis)
    path = write_tracks(tracks, root / "tracks" / f"{name}.zarr", chunk_frames=100)
    fit_session(path, plan, SolverConfig(lanes=8), fit_path, chunk_frames=config.n_frames // 2)


@pytest.fixture(scope="session")
def archive_root(tmp_path_factory, fly_plan_path) -> Path:
    root = tmp_path_factory.mktemp("archive")
    noisy = SynthConfig(n_frames=200, n_individuals=2, noise=0.004, dropout=0.03, outliers=0.01)
    # the mannequin is +Y up (synth labels every session z-up)
    _session(mannequin(), noisy, 8, "walk", root, root / "fits" / "walk.zarr", "y")
    fly = load_body_plan(fly_plan_path)
    clean = SynthConfig(n_frames=120, noise=0.001)
    _session(fly, clean, 9, "hop", root, root / "fits" / "lab_b" / "hop.zarr", "z")
    return root


@pytest.fixture(scope="session")
def fits_root(archive_root) -> Path:
    return archive_root / "fits"


@pytest.fixture
def archive_copy(archive_root, tmp_path) -> Path:
    """A private copy of the archive (fit attrs point at the original tracks stores)."""
    out = tmp_path / "archive"
    shutil.copytree(archive_root, out)
    return out


@pytest.fixture(scope="session")
def walk(fits_root) -> xr.Dataset:
    from pipeline.store.fit_store import open_fit

    return open_fit(fits_root / "walk.zarr")


@pytest.fixture(scope="session")
def hop(fits_root) -> xr.Dataset:
    from pipeline.store.fit_store import open_fit

    return open_fit(fits_root / "lab_b" / "hop.zarr")
