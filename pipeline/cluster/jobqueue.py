"""SLURM / PBS clusters through dask-jobqueue, with every submitted job on record.

:func:`jobqueue_cluster` builds a ``SLURMCluster``/``PBSCluster`` whose job class records
each job id in a :class:`JobLedger` (so kinefit can ``scancel`` every one of them, queued
ones too) and turns a refused submission (``sbatch: error: ...``, no ``sbatch`` on the
PATH) into one line in the ledger instead of a traceback on the event loop. The
:class:`~pipeline.cluster.watch.JobWatch` reads the ledger.

kinefit's settings are merged with the user's dask-jobqueue config (``jobqueue.slurm.*``):
its prologue, extra directives, worker arguments and scheduler options come first, then
kinefit's; unset scalar settings fall back to it.
"""

from __future__ import annotations

import json
import shlex
import signal
import threading
from pathlib import Path
from typing import Any

from pipeline.cluster.cluster_config import PRE_SPAWN_ENV, ClusterConfig
from pipeline.cluster.jobs import cancel_jobs
from pipeline.errors import ClusterError

#: Default job log folder (``ClusterConfig.log_directory``).
DEFAULT_LOG_DIRECTORY = "~/.kinefit/jobs"
_SCHEDULERS = {"slurm": "SLURM", "pbs": "PBS"}


class JobLedger:
    """Every job submitted for one cluster, and every submission the scheduler refused.

    Attributes
    ----------
    kind : {"slurm", "pbs"}
    ids : list of str
        Job ids in submission order.
    refused : list of str
        One line per refused submission, e.g. ``SLURM refused the worker jobs: sbatch:
        error: invalid partition specified: nosuch``.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.ids: list[str] = []
        self.refused: list[str] = []
        self._lock = threading.Lock()

    @property
    def scheduler(self) -> str:
        """``SLURM`` or ``PBS``."""
        return _SCHEDULERS[self.kind]

    def add(self, job_id: str) -> None:
        """Record a submitted job."""
        with self._lock:
            self.ids.append(str(job_id))

    def refuse(self, line: str) -> None:
        """Record a refused submission (one line)."""
        with self._lock:
            self.refused.append(line)

    def cancel(self) -> bool:
        """Cancel every recorded job by id (those already ended are ignored by the queue)."""
        with self._lock:
            ids = list(self.ids)
        return cancel_jobs(self.kind, ids)


def refusal(exc: BaseException, command: str, scheduler: str) -> str:
    """One line for a failed job submission (dask-jobqueue's RuntimeError or OSError)."""
    if isinstance(exc, OSError):
        return (
            f"cannot submit {scheduler} jobs: {command!r} is not on the PATH (run kinefit "
            f"where {scheduler}'s commands are installed, e.g. a login node)"
        )
    text = str(exc)
    stderr = text.split("stderr:", 1)[-1].strip().splitlines()
    lines = [line.strip() for line in stderr if line.strip()]
    errors = [line for line in lines if "error" in line.lower()] or lines or [text]
    return f"{scheduler} refused the worker jobs: {errors[0]}"


def recording_job(base: type, ledger: JobLedger) -> type:
    """A subclass of a dask-jobqueue ``Job`` class that reports to ``ledger``."""
    from distributed.core import Status

    class KinefitJob(base):  # type: ignore[misc, valid-type]
        async def start(self) -> None:
            try:
                await super().start()
            except (RuntimeError, OSError, ValueError) as exc:
                command = shlex.split(self.submit_command)[0]
                ledger.refuse(refusal(exc, command, ledger.scheduler))
                self.job_id = None
                self.status = Status.running  # nothing to wait for; the watch reports it
                return
            ledger.add(self.job_id)

    KinefitJob.__name__ = KinefitJob.__qualname__ = f"Kinefit{base.__name__}"
    return KinefitJob


def import_jobqueue(mode: str) -> Any:
    """Import ``dask_jobqueue``, keeping Python's SIGINT handler and its config defaults.

    Its import replaces the handler with ``sys.exit()``, which turned Ctrl-C into a
    silent exit status 0. It registers its defaults (``jobqueue.*``) in dask's config once,
    at import; an import inside a ``dask.config.set({"jobqueue.slurm.queue": ...})`` block
    that began before it loses them all when the block ends (the block takes back the
    ``jobqueue`` key it inserted), and every later cluster failed with
    ``KeyError: 'jobqueue'``. Missing, they are registered again (the user's settings win).
    """
    main = threading.current_thread() is threading.main_thread()
    saved = signal.getsignal(signal.SIGINT) if main else None
    try:
        import dask_jobqueue
    except ImportError as exc:
        raise ClusterError(
            f"mode {mode!r} needs dask-jobqueue: pip install 'kinefit[hpc]'"
        ) from exc
    finally:
        if saved is not None:
            signal.signal(signal.SIGINT, saved)
    import dask

    if dask.config.get(f"jobqueue.{mode}", None) is None:
        dask_jobqueue.config.reconfigure()
    return dask_jobqueue


def _lifetime_args(lifetime: float | None) -> list[str]:
    if lifetime is None:
        return []
    stagger = min(60.0, lifetime / 10)
    return ["--lifetime", f"{lifetime:g}s", "--lifetime-stagger", f"{stagger:g}s"]


def jobqueue_options(config: ClusterConfig) -> dict[str, Any]:
    """Keyword arguments of ``SLURMCluster``/``PBSCluster``.

    kinefit's settings merged with the user's dask-jobqueue config: its lists come first
    and kinefit's are appended; unset values are left to it.
    """
    import dask

    def user(key: str, default: Any = None) -> Any:
        value = dask.config.get(f"jobqueue.{config.mode}.{key}", default=default)
        return default if value is None else value

    cores = config.cores or user("cores") or 1
    processes = config.processes or (None if config.cores else user("processes")) or cores
    logs = config.log_directory or user("log-directory") or DEFAULT_LOG_DIRECTORY
    nanny = json.dumps(PRE_SPAWN_ENV)  # the nanny's own pre-spawn env would override exports
    prologue = [
        *user("job-script-prologue", []),
        *(f"export {k}={shlex.quote(v)}" for k, v in config.env.items()),
        f"export DASK_DISTRIBUTED__NANNY__PRE_SPAWN_ENVIRON={shlex.quote(nanny)}",
        *config.job_script_prologue,
    ]
    scheduler = {**user("scheduler-options", {}), "dashboard_address": config.dashboard_address}
    if config.scheduler_interface:
        scheduler["interface"] = config.scheduler_interface
    return {
        "cores": cores,
        "processes": processes,
        "memory": config.memory or user("memory") or "2GiB",
        "walltime": config.walltime,
        "queue": config.queue,
        "account": config.account,
        "interface": config.interface,
        "python": config.python,
        "job_name": config.job_name,
        "log_directory": str(Path(logs).expanduser().resolve()),
        "job_script_prologue": prologue,
        "job_extra_directives": [*user("job-extra-directives", []), *config.job_extra_directives],
        "worker_extra_args": [*user("worker-extra-args", []), *_lifetime_args(config.lifetime)],
        "scheduler_options": scheduler,
    }


def jobqueue_cluster(config: ClusterConfig) -> Any:
    """A ``SLURMCluster``/``PBSCluster`` with no jobs yet; its ledger is ``cluster.ledger``.

    Raises
    ------
    ClusterError
        dask-jobqueue is not installed, or an option it rejects (e.g. an unknown
        ``interface``).
    """
    module = import_jobqueue(config.mode)
    base = module.SLURMCluster if config.mode == "slurm" else module.PBSCluster
    ledger = JobLedger(config.mode)
    options = jobqueue_options(config)
    try:
        cluster = base(job_cls=recording_job(base.job_cls, ledger), **options)
    except (ValueError, RuntimeError) as exc:  # e.g. an interface this machine lacks
        raise ClusterError(f"cannot start the {ledger.scheduler} cluster: {exc}") from exc
    cluster.ledger = ledger
    return cluster
