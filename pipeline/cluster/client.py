"""A dask.distributed client from a typed config: local, address, SLURM/PBS, Kubernetes.

Workers run one thread each with BLAS pinned to one thread (``OMP_NUM_THREADS`` and
friends), so that solver tasks parallelize over processes and never oversubscribe cores.
The same :func:`pipeline.fit.fit_session` runs on every kind of cluster.

Batch clusters (SLURM/PBS) are watched (:mod:`pipeline.cluster.watch`): :func:`make_client`
returns once a first worker is connected or raises the reason none will be, and
:func:`run_tasks` replaces lost jobs while it waits for its tasks. :func:`close_client`
cancels every job kinefit submitted, by id, before it closes anything else.

Nothing happens at import: clusters start only in :func:`make_client` /
:func:`make_cluster`, and dask-jobqueue and dask-kubernetes are imported only when asked
for.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from pipeline.cluster.cluster_config import PRE_SPAWN_ENV, ClusterConfig
from pipeline.cluster.jobqueue import jobqueue_cluster
from pipeline.cluster.watch import JobWatch
from pipeline.errors import ClusterError

_INTERRUPTED = threading.Event()
_WATCHES: dict[str, JobWatch] = {}
#: Seconds :func:`close_client` gives the client and the cluster to close.
CLOSE_TIMEOUT_S = 10


def interrupt() -> None:
    """Make every running :func:`run_tasks` stop within a second (Ctrl-C, SIGTERM)."""
    _INTERRUPTED.set()


def interrupted() -> bool:
    """Whether :func:`interrupt` was called since the last :func:`clear_interrupt`."""
    return _INTERRUPTED.is_set()


def clear_interrupt() -> None:
    """Undo :func:`interrupt` (a new run in the same process)."""
    _INTERRUPTED.clear()


def watch_of(client: Any) -> JobWatch | None:
    """The :class:`JobWatch` of the batch cluster a client is connected to, if any."""
    address = getattr(getattr(client, "scheduler", None), "address", None)
    return _WATCHES.get(address) if address else None


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
    with _workers_deaf_to_ctrl_c(), dask.config.set({key: pre_spawn}):
        return LocalCluster(
            n_workers=config.n_workers,
            threads_per_worker=1,
            processes=True,
            memory_limit=config.memory_limit,
            env=config.env,
            dashboard_address=config.dashboard_address,
            silence_logs=_worker_log_level(),
        )


@contextmanager
def _workers_deaf_to_ctrl_c() -> Iterator[None]:
    """Within: SIGINT is ignored, so worker processes spawned meanwhile inherit it ignored.

    A terminal's Ctrl-C goes to the whole process group. Local workers that hear it die
    on their own, each printing a ``KeyboardInterrupt`` traceback (or, caught while its
    interpreter starts, ``Fatal Python error: init_import_site``) into kinefit's terminal;
    kinefit closes the cluster itself on Ctrl-C, so they need not hear it. An ignored
    signal is the one disposition that survives ``exec`` (Python then installs no
    ``KeyboardInterrupt`` handler), and ``LocalCluster`` returns only once its workers
    have started. The cost: a Ctrl-C during the cluster's 1-3 s start is not seen. Only
    in the main thread (the only one that may set handlers); elsewhere a no-op.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _worker_log_level() -> int:
    """How much the local workers print: as much as this process shows of distributed.

    ``kinefit`` raises the ``distributed`` loggers to ERROR unless ``--verbose``; the workers
    are separate processes printing to the same terminal, so they then print only CRITICAL
    (a failed task is reported once, by kinefit, through its future).
    """
    shown = logging.getLogger("distributed").getEffectiveLevel()
    return logging.CRITICAL if shown > logging.WARNING else logging.WARNING


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
    if config.batch:
        return jobqueue_cluster(config)
    if config.mode == "kubernetes":
        return _kubernetes(config)
    raise ClusterError("mode 'address' connects to an existing scheduler; use make_client")


def make_client(config: ClusterConfig, status: Callable[[str], None] | None = None) -> Any:
    """Return a ``distributed.Client`` for the config.

    For ``local``, ``slurm``/``pbs`` (``n_workers`` jobs) and ``kubernetes`` the client
    owns its cluster: :func:`close_client` closes both. ``address`` connects to a running
    scheduler and leaves it running. A batch client is returned once a worker connected.

    Parameters
    ----------
    config : ClusterConfig
    status : callable, optional
        ``status(text)`` while waiting for batch jobs (``waiting for 2 SLURM job(s): job
        12 PD (Resources)``).

    Raises
    ------
    ClusterError
        The batch jobs were refused, ended before a worker started, or no worker started
        within ``startup_timeout`` seconds; every submitted job is cancelled first.
    """
    from distributed import Client

    if config.mode == "address":
        return Client(config.address)
    if config.batch and config.n_workers < 1:
        raise ClusterError(
            f"cluster.n_workers is the number of {config.mode.upper()} jobs; 0 jobs would "
            "leave the tasks without workers (use mode: local, n_workers: 0 to fit here)"
        )
    quiet = config.mode == "local" and _worker_log_level() == logging.CRITICAL
    from pipeline.cluster.plugins import SolverPreload  # imports distributed

    cluster = make_cluster(config)  # (a LocalCluster resets the distributed loggers)
    client = None
    try:
        if config.batch:
            watch = JobWatch(cluster, config.n_workers, config.startup_timeout)
            cluster.scale(jobs=config.n_workers)
        client = Client(cluster)
        client._kinefit_owned_cluster = cluster  # closed by close_client
        if quiet:
            from pipeline.cluster.plugins import QuietWorkerLogs  # imports distributed

            client.register_plugin(QuietWorkerLogs())
        client.register_plugin(SolverPreload())  # workers load the solver kernels on start
        if config.batch:
            _WATCHES[client.scheduler.address] = watch
            watch.wait_for_workers(status)
    except BaseException:
        _close(client, cluster)
        raise
    return client


def _close(client: Any, cluster: Any) -> None:
    ledger = getattr(cluster, "ledger", None)
    if ledger is not None:
        ledger.cancel()  # by id, queued jobs too, before anything else can hang
    if client is not None:
        _WATCHES.pop(getattr(client.scheduler, "address", ""), None)
        with contextlib.suppress(Exception):  # a scheduler already gone
            client.close(timeout=CLOSE_TIMEOUT_S)
    if cluster is not None:
        if ledger is not None:
            with contextlib.suppress(Exception):
                cluster.close(timeout=CLOSE_TIMEOUT_S)
        else:
            cluster.close()


def close_client(client: Any) -> None:
    """Close a client from :func:`make_client` and the cluster it owns.

    A batch cluster's jobs are cancelled by id first (queued ones too).
    """
    _close(client, getattr(client, "_kinefit_owned_cluster", None))


@contextmanager
def cluster_client(
    config: ClusterConfig, status: Callable[[str], None] | None = None
) -> Iterator[Any]:
    """Context manager around :func:`make_client` / :func:`close_client`."""
    client = make_client(config, status)
    try:
        yield client
    finally:
        close_client(client)


def _check(watch: JobWatch | None) -> None:
    if _INTERRUPTED.is_set():
        raise ClusterError("interrupted")
    if watch is not None:
        watch.check()


def _result(future: Any, watch: JobWatch | None) -> Any:
    """A finished task's result, watching the cluster while it is fetched.

    Fetching needs the worker holding it; if that worker is lost meanwhile, the
    scheduler reruns the task once a (replacement) worker connects.
    """
    while True:
        try:
            return future.result(timeout=1)
        except TimeoutError:
            _check(watch)


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
    has less left to do. While waiting, a batch cluster's jobs are watched (lost jobs
    replaced) and :func:`interrupt` is honoured within a second.

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

    Raises
    ------
    ClusterError
        The batch cluster cannot go on (see :class:`~pipeline.cluster.watch.JobWatch`),
        or :func:`interrupt` was called; the calls still pending are cancelled.
    """
    results, failures = [], []
    if client is None:
        for n, args in enumerate(arguments):
            _check(None)
            try:
                results.append(function(*args))
            except Exception as exc:  # noqa: BLE001 - reported together by the caller
                failures.append((args, exc))
            if progress:
                progress(n + 1, len(arguments))
        return results, failures
    from distributed import wait

    futures = {client.submit(function, *args, pure=False): args for args in arguments}
    pending, watch, n = set(futures), watch_of(client), 0
    try:
        while pending:
            try:
                done, pending = wait(list(pending), timeout=0.5, return_when="FIRST_COMPLETED")
            except TimeoutError:
                done = set()
            for future in done:
                if future.status not in ("finished", "error", "cancelled"):
                    pending.add(future)  # "lost" with its worker: the scheduler reruns it
                    continue
                if future.status == "finished":
                    results.append(_result(future, watch))
                elif future.status == "cancelled":
                    failures.append((futures[future], ClusterError("task cancelled")))
                else:
                    failures.append((futures[future], future.exception()))
                # released once taken: a finished call whose result sat on a worker that
                # dies later is not rerun by the scheduler (it would write into a store
                # that may be published by then)
                del futures[future]
                future.release()
                n += 1
                if progress:
                    progress(n, len(arguments))
            _check(watch)
    finally:
        if pending:
            with contextlib.suppress(Exception):
                client.cancel(list(pending))
    return results, failures
