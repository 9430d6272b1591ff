"""A Dask client for whatever the caller has: a cluster config, an address, or nothing."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from pipeline.cluster.client import close_client, make_client
from pipeline.cluster.cluster_config import ClusterConfig

__all__ = ["dask_client"]


@contextmanager
def dask_client(
    cluster: ClusterConfig | str | None, status: Callable[[str], None] | None = None
) -> Iterator[Any]:
    """A client for a cluster config, a scheduler address, or None (in this process).

    A config's cluster is started here and closed on exit (a batch cluster's jobs are
    cancelled, queued ones too); an address is only connected to. ``mode: local`` with
    ``n_workers: 0`` means no cluster at all (``None``). ``status(text)`` is called while
    batch jobs start (:func:`~pipeline.cluster.client.make_client`).
    """
    if cluster is None or (
        isinstance(cluster, ClusterConfig) and cluster.mode == "local" and cluster.n_workers == 0
    ):
        yield None
        return
    if isinstance(cluster, str):
        from distributed import Client  # distributed is imported only when a client is made

        client = Client(cluster)
        try:
            yield client
        finally:
            client.close()
        return
    client = make_client(cluster, status)
    try:
        yield client
    finally:
        close_client(client)
