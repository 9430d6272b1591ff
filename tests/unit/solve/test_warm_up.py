"""The compiled kernels are loaded up front: in this process and on every worker."""

from __future__ import annotations

import pytest

from pipeline.cluster import ClusterConfig, cluster_client
from pipeline.solve.compiled import LOADED_MESSAGE, SLOW_WARM_UP, WARM_UP_MESSAGE, is_warm, warm_up

# make check skips it: loads kernels in new processes and cluster workers
pytestmark = pytest.mark.slow


def test_warm_up_loads_the_kernels_once_and_says_so():
    said: list[str] = []
    seconds = warm_up(said.append)
    assert is_warm()
    if seconds == 0:  # warm already (another test of this process)
        assert said == []
    elif seconds <= SLOW_WARM_UP:  # loaded from the cache: said as a load, not a compile
        assert said == [f"{LOADED_MESSAGE} ({seconds:.1f} s)"]
    else:  # compiled: said while it compiles
        assert said == [WARM_UP_MESSAGE]
    assert warm_up(said.append) == 0.0 and len(said) <= 1  # already warm: silent


def test_workers_of_a_new_cluster_have_the_kernels_before_any_task():
    with cluster_client(ClusterConfig(n_workers=2)) as client:
        assert list(client.run(is_warm).values()) == [True, True]
