"""A dask.distributed client from a typed config: local, address, SLURM/PBS, Kubernetes.

Workers run one thread each with BLAS pinned to one thread (``OMP_NUM_THREADS`` and
friends), so that solver tasks parallelize over processes and never oversubscribe cores.
The same :func:`pipeline.fit.fit_session` runs on every kind of cluster.

Nothing happens at import: clusters start only in :func:`make_client` /
:func:`make_cluster`, and dask-jobqueue and dask-kubernetes are imported only when asked
for.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from pipeline.errors import ClusterError

#: Environment pinning BLAS / OpenMP pools to one thread per worker process.
BLAS_ENV: dict[str, str] = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "VECLIB_MAXIMUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
}
#: glibc malloc settings for workers. distributed's default ``MALLOC_TRIM_THRESHOLD_=65536``
#: (set to return memory to the OS) also fixes the mmap threshold at 128 KiB, so every large
#: numpy temporary of the solver is mmapped and page-faulted anew: measured 1.8x slower
#: solves. These values keep temporaries up to 32 MiB on the heap; a task's working set is
#: bounded by its chunk, so worker memory stays flat.
MALLOC_ENV: dict[str, str] = {
    "MALLOC_TRIM_THRESHOLD_": str(128 * 2**20),
    "MALLOC_MMAP_THRESHOLD_": str(32 * 2**20),
}
#: Set before a worker process starts (dask's ``distributed.nanny.pre-spawn-environ``).
PRE_SPAWN_ENV: dict[str, str] = {**BLAS_ENV, **MALLOC_ENV}
MODES: tuple[str, ...] = ("local", "address", "slurm", "pbs", "kubernetes")


class ClusterConfig(BaseModel):
    """Where the chunk tasks run.

    Attributes
    ----------
    mode : {"local", "address", "slurm", "pbs", "kubernetes"}
        ``local``: a LocalCluster of worker processes on this machine. ``address``: an
        existing scheduler. ``slurm``/``pbs``: batch jobs through dask-jobqueue (extra
        ``hpc``). ``kubernetes``: pods through dask-kubernetes (extra ``kubernetes``).
    n_workers : int
        Local worker processes; batch jobs (slurm/pbs); worker pods (kubernetes).
    memory_limit : str or None
        Local: memory per worker (``"2GiB"``, ``"auto"``) or None for no limit.
    address : str or None
        Scheduler address (``tcp://host:8786``); required by ``address`` mode only.
    worker_env : dict
        Extra environment variables for the workers (on top of :data:`BLAS_ENV`).
    cores, memory, walltime, queue, account, interface, job_extra_directives
        Batch jobs: cores and memory per job (one single-threaded worker per core),
        wall time, queue/partition, account, network interface of the workers (set it
        on real clusters) and extra ``#SBATCH``/``#PBS`` lines.
    image, namespace
        Kubernetes: worker image and namespace.
    dashboard_address : str
        Local: where the scheduler serves its dashboard and HTTP endpoints; the default
        ``":0"`` picks a free port (``client.dashboard_link``), so clusters never clash.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Literal["local", "address", "slurm", "pbs", "kubernetes"] = "local"
    n_workers: int = Field(2, ge=0)
    memory_limit: str | None = "auto"
    address: str | None = None
    worker_env: dict[str, str] = Field(default_factory=dict)
    cores: int = Field(1, ge=1)
    memory: str = "2GiB"
    walltime: str = "01:00:00"
    queue: str | None = None
    account: str | None = None
    interface: str | None = None
    job_extra_directives: tuple[str, ...] = ()
    image: str = "ghcr.io/dask/dask:latest"
    namespace: str | None = None
    dashboard_address: str = ":0"

    @model_validator(mode="after")
    def _address_matches_mode(self) -> ClusterConfig:
        if self.mode == "address" and not self.address:
            raise ValueError("mode 'address' needs address (e.g. tcp://127.0.0.1:8786)")
        if self.mode != "address" and self.address:
            raise ValueError(f"address is only used by mode 'address', not {self.mode!r}")
        return self

    @classmethod
    def from_yaml(cls, path: str | Path) -> ClusterConfig:
        """Load and validate a cluster config from a YAML file (one clear error)."""
        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ClusterError(f"{path}: invalid cluster config: {describe(exc)}") from exc
        except (OSError, yaml.YAMLError) as exc:
            raise ClusterError(f"{path}: cannot read the cluster config ({exc})") from exc

    @property
    def env(self) -> dict[str, str]:
        """Worker environment: :data:`PRE_SPAWN_ENV` plus :attr:`worker_env`."""
        return {**PRE_SPAWN_ENV, **{k: str(v) for k, v in self.worker_env.items()}}


def describe(exc: ValidationError) -> str:
    """One line per pydantic error (``field: message``), naming the valid fields."""
    parts = [f"{'.'.join(map(str, e['loc'])) or 'config'}: {e['msg']}" for e in exc.errors()]
    if any(e["type"] == "extra_forbidden" for e in exc.errors()):
        parts.append(f"valid settings: {', '.join(ClusterConfig.model_fields)}")
    return "; ".join(parts)


def _jobqueue(config: ClusterConfig) -> Any:
    try:
        import dask_jobqueue
    except ImportError as exc:
        raise ClusterError(
            f"mode {config.mode!r} needs dask-jobqueue: pip install 'kinefit[hpc]'"
        ) from exc
    cls = dask_jobqueue.SLURMCluster if config.mode == "slurm" else dask_jobqueue.PBSCluster
    nanny = json.dumps(PRE_SPAWN_ENV)  # the nanny's own pre-spawn env would override exports
    prologue = [f"export {k}={v}" for k, v in config.env.items()]
    prologue.append(f"export DASK_DISTRIBUTED__NANNY__PRE_SPAWN_ENVIRON='{nanny}'")
    return cls(
        cores=config.cores,
        processes=config.cores,
        memory=config.memory,
        walltime=config.walltime,
        queue=config.queue,
        account=config.account,
        interface=config.interface,
        job_extra_directives=list(config.job_extra_directives),
        job_script_prologue=prologue,
    )


def _kubernetes(config: ClusterConfig) -> Any:
    try:
        from dask_kubernetes.operator import KubeCluster
    except ImportError as exc:
        raise ClusterError(
            "mode 'kubernetes' needs dask-kubernetes: pip install 'kinefit[kubernetes]'"
        ) from exc
    return KubeCluster(
        name="kinefit",
        image=config.image,
        n_workers=config.n_workers,
        env=config.env,
        namespace=config.namespace,
    )


def _local(config: ClusterConfig) -> Any:
    import dask
    from distributed import LocalCluster

    key = "distributed.nanny.pre-spawn-environ"
    pre_spawn = {**(dask.config.get(key, default={}) or {}), **PRE_SPAWN_ENV}
    with dask.config.set({key: pre_spawn}):
        return LocalCluster(
            n_workers=config.n_workers,
            threads_per_worker=1,
            processes=True,
            memory_limit=config.memory_limit,
            env=config.env,
            dashboard_address=config.dashboard_address,
        )


def make_cluster(config: ClusterConfig) -> Any:
    """Start the cluster a config describes (not for ``address`` mode).

    Batch clusters (slurm/pbs) are created with no jobs and scaled by
    :func:`make_client`; their ``job_script()`` can be inspected without a queue.

    Raises
    ------
    ClusterError
        ``address`` mode, or a missing optional dependency.
    """
    if config.mode == "local":
        return _local(config)
    if config.mode in ("slurm", "pbs"):
        return _jobqueue(config)
    if config.mode == "kubernetes":
        return _kubernetes(config)
    raise ClusterError("mode 'address' connects to an existing scheduler; use make_client")


def make_client(config: ClusterConfig) -> Any:
    """Return a ``distributed.Client`` for the config.

    For ``local``, ``slurm``/``pbs`` (scaled to ``n_workers`` jobs) and ``kubernetes``
    the client owns its cluster: :func:`close_client` closes both. ``address`` connects
    to a running scheduler and leaves it running.
    """
    from distributed import Client

    if config.mode == "address":
        return Client(config.address)
    cluster = make_cluster(config)
    try:
        if config.mode in ("slurm", "pbs") and config.n_workers:
            cluster.scale(jobs=config.n_workers)
        client = Client(cluster)
    except BaseException:
        cluster.close()
        raise
    client._kinefit_owned_cluster = cluster  # closed by close_client
    return client


def close_client(client: Any) -> None:
    """Close a client from :func:`make_client`, and the cluster it owns."""
    cluster = getattr(client, "_kinefit_owned_cluster", None)
    client.close()
    if cluster is not None:
        cluster.close()


@contextmanager
def cluster_client(config: ClusterConfig) -> Iterator[Any]:
    """Context manager around :func:`make_client` / :func:`close_client`."""
    client = make_client(config)
    try:
        yield client
    finally:
        close_client(client)


def run_tasks(
    function: Callable[..., Any],
    arguments: Sequence[tuple[Any, ...]],
    client: Any = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[Any], list[tuple[tuple[Any, ...], BaseException]]]:
    """Call ``function(*args)`` for each tuple in ``arguments``, one dask task each.

    With a client the calls are submitted to the cluster (arguments are pickled into the
    task: keep them small, pass paths rather than arrays); without one they run in this
    process, one after another. A failed call does not stop the others, so that a rerun
    has less left to do.

    Parameters
    ----------
    function : callable
        Must be importable on the workers.
    arguments : sequence of tuple
        Positional arguments of each call.
    client : distributed.Client, optional
    progress : callable, optional
        ``progress(done, total)`` after each finished call.

    Returns
    -------
    results : list
        Return values, in completion order.
    failures : list of (args, exception)
    """
    results, failures = [], []
    if client is None:
        for n, args in enumerate(arguments):
            try:
                results.append(function(*args))
            except Exception as exc:  # noqa: BLE001 - reported together by the caller
                failures.append((args, exc))
            if progress:
                progress(n + 1, len(arguments))
        return results, failures
    from distributed import as_completed

    futures = {client.submit(function, *args, pure=False): args for args in arguments}
    for n, future in enumerate(as_completed(futures)):
        if future.status == "error":
            failures.append((futures[future], future.exception()))
        else:
            results.append(future.result())
        if progress:
            progress(n + 1, len(arguments))
    return results, failures
