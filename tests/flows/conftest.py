"""Fixtures of the flow tests: ONE Prefect test harness per test session, quiet and offline.

The harness (a temporary SQLite database and API server, about 11 s to start) is
session-scoped and requested only by tests that run flows. A LocalCluster is shared per
module; run configs point at it with ``cluster: {mode: address, address: ...}``.
"""

from __future__ import annotations

import os
import tempfile

import pytest

# Before anything imports prefect: no telemetry, no UI, a private Prefect home.
QUIET = {
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_TELEMETRY_ENABLE_RESOURCE_METRICS": "false",
    "PREFECT_SERVER_UI_ENABLED": "false",
    "PREFECT_LOGGING_TO_API_ENABLED": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",
}
for _key, _value in QUIET.items():
    os.environ.setdefault(_key, _value)
os.environ.setdefault("PREFECT_HOME", tempfile.mkdtemp(prefix="kinefit-prefect-home-"))
os.environ.setdefault("KINEFIT_HOME", tempfile.mkdtemp(prefix="kinefit-home-"))


@pytest.fixture(scope="session")
def prefect_harness():
    from prefect.testing.utilities import prefect_test_harness  # noqa: TID251

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture(scope="module")
def dask_address():
    from pipeline.cluster import ClusterConfig, close_client, make_client

    client = make_client(ClusterConfig(mode="local", n_workers=2))
    try:
        yield client.scheduler.address
    finally:
        close_client(client)


@pytest.fixture(scope="module")
def plan():
    from pipeline.bodyplan import mannequin

    return mannequin()
