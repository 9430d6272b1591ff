"""Shared test fixtures: the shared data folder and a seeded random generator."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
#: ``../shared`` beside the checkout (CI lays it there); override with KINEFIT_SHARED.
SHARED = Path(os.environ.get("KINEFIT_SHARED", ROOT.parent / "shared")).resolve()
QUICKIK = SHARED / "data" / "quickik"
KIMODO = SHARED / "data" / "kimodo"


@pytest.fixture(scope="session")
def quickik_dir() -> Path:
    if not QUICKIK.is_dir():
        pytest.fail(f"shared data not found at {QUICKIK}; set KINEFIT_SHARED")
    return QUICKIK


@pytest.fixture(scope="session")
def fly_plan_path(quickik_dir: Path) -> Path:
    return quickik_dir / "neuromechfly_ypr_legs.json"


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261130)
