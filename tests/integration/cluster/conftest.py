"""Tracks stores shared by the real-SLURM tests (the cluster: tests/fixtures/slurm.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.slurm_cli import tracks_store


@pytest.fixture(scope="session")
def small(tmp_path_factory) -> Path:
    """400 frames, 4 chunks of 100."""
    return tracks_store(tmp_path_factory.mktemp("tracks") / "small.zarr", 400)


@pytest.fixture(scope="session")
def long(tmp_path_factory) -> Path:
    """3000 frames, 30 chunks: long enough to interrupt."""
    return tracks_store(tmp_path_factory.mktemp("tracks") / "long.zarr", 3000)
