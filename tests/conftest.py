"""Shared test fixtures: the shared data folder and a seeded random generator.

The fixture modules in ``tests/fixtures/`` are pytest plugins, registered here once:
``orchestration`` (one Prefect test harness per session, a module-scoped local Dask
cluster), ``fit_archive`` (a small fitted archive built once), ``reliability_fixtures``,
``slurm`` (a real one-node SLURM cluster), ``scheduling`` (kernels warmed once before the
xdist workers start, the server tests in one xdist group, their timeouts).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from tests.fixtures.shared_data import KIMODO, QUICKIK, ROOT, SHARED  # noqa: F401 (re-exported)

pytest_plugins = [
    "tests.fixtures.orchestration",
    "tests.fixtures.fit_archive",
    "tests.fixtures.reliability_fixtures",
    "tests.fixtures.slurm",
    "tests.fixtures.scheduling",
]


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


@pytest.fixture(autouse=True)
def _child_env_restored():
    """A test's quieted run (:func:`flows.logs.quiet_children`) leaves no trace in the next.

    ``kinefit``'s quieting sets :data:`flows.logs.CHILD_ENV` in ``os.environ`` for the
    processes it starts; left there, a later test's subprocess (``kinefit serve
    --verbose``) would inherit a quiet Prefect console.
    """
    from flows.logs import CHILD_ENV

    before = {key: os.environ.get(key) for key in CHILD_ENV}
    yield
    for key, value in before.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
