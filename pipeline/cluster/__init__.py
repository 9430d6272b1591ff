"""Where chunk tasks run: ClusterConfig and Dask clients (local, address, SLURM/PBS, k8s)."""

from pipeline.cluster.client import (
    BLAS_ENV,
    MALLOC_ENV,
    MODES,
    PRE_SPAWN_ENV,
    ClusterConfig,
    close_client,
    cluster_client,
    make_client,
    make_cluster,
    run_tasks,
)
from pipeline.errors import ClusterError

__all__ = [
    "BLAS_ENV",
    "MALLOC_ENV",
    "MODES",
    "PRE_SPAWN_ENV",
    "ClusterConfig",
    "ClusterError",
    "close_client",
    "cluster_client",
    "make_client",
    "make_cluster",
    "run_tasks",
]
