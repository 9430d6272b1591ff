"""Where chunk tasks run: ClusterConfig and Dask clients (local, address, SLURM/PBS, k8s).

``config`` holds :class:`ClusterConfig`; ``client`` makes and closes clients and runs
tasks; ``jobqueue`` builds SLURM/PBS clusters (dask-jobqueue) that record their jobs;
``jobs`` asks the batch scheduler about them; ``watch`` fails fast and replaces lost
jobs; ``connect`` gives a client for a config, an address or nothing.
"""

from pipeline.cluster.client import (
    clear_interrupt,
    close_client,
    cluster_client,
    interrupt,
    interrupted,
    make_client,
    make_cluster,
    run_tasks,
    watch_of,
)
from pipeline.cluster.cluster_config import (
    BLAS_ENV,
    MALLOC_ENV,
    MODES,
    PRE_SPAWN_ENV,
    STARTUP_TIMEOUT_S,
    ClusterConfig,
)
from pipeline.cluster.connect import dask_client
from pipeline.errors import ClusterError

__all__ = [
    "BLAS_ENV",
    "MALLOC_ENV",
    "MODES",
    "PRE_SPAWN_ENV",
    "STARTUP_TIMEOUT_S",
    "ClusterConfig",
    "ClusterError",
    "clear_interrupt",
    "close_client",
    "cluster_client",
    "dask_client",
    "interrupt",
    "interrupted",
    "make_client",
    "make_cluster",
    "run_tasks",
    "watch_of",
]
