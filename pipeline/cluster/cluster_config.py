"""ClusterConfig: where the chunk tasks run, and what a batch job asks the scheduler for.

Batch settings left at ``None`` fall back to the user's dask-jobqueue configuration
(``jobqueue.slurm.*`` / ``jobqueue.pbs.*`` in ``~/.config/dask/jobqueue.yaml``), then to
dask-jobqueue's defaults; list settings (prologue, extra directives, worker arguments) are
appended to the user's, never replace them.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

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
#: A scheduler address: an optional protocol, a host, a port in 1-65535.
_ADDRESS = re.compile(
    r"inproc://\S+|([a-z][a-z0-9+.-]*://)?[^\s:/]+:"
    r"(6553[0-5]|655[0-2]\d|65[0-4]\d\d|6[0-4]\d{3}|[1-5]\d{4}|[1-9]\d{0,3})/?"
)
MODES: tuple[str, ...] = ("local", "address", "slurm", "pbs", "kubernetes")
#: The most local worker processes a run without a config starts (:func:`machine_width`).
MAX_MACHINE_WORKERS = 8
#: Sessions of at most this many frame-individuals are fitted in the calling process when
#: no cluster is named: starting local worker processes (each imports the stack and loads
#: the compiled solver) costs more than they save below it. Measured with ``python
#: benchmarks/inprocess_threshold.py`` (3 interleaved rounds, medians) on a shared 2-core
#: AMD EPYC VM, 2026-12-02 18:31-19:42 UTC, commit 51cace4, load average 2-14 (other
#: agents): 2 workers / in process = 3.5x at 2,330 frames (range 1.9-3.7), 1.7x at 20,000
#: (1.3-2.2), 0.88x at 80,000 (0.88-1.09), 0.72x at 160,000 (0.72-1.11), 1.5x at 320,000
#: (1.5-2.4). The limit is the first length whose median favours the workers; the spread
#: straddles 1 from there on, so the crossover is 20,000-80,000 on this machine.
IN_PROCESS_MAX_FRAMES = 80_000
#: Default of :attr:`ClusterConfig.startup_timeout`, seconds.
STARTUP_TIMEOUT_S: float = 300.0


class ClusterConfig(BaseModel):
    """Where the chunk tasks run.

    Attributes
    ----------
    mode : {"local", "address", "slurm", "pbs", "kubernetes"}
        ``local``: a LocalCluster of worker processes on this machine. ``address``: an
        existing scheduler. ``slurm``/``pbs``: batch jobs through dask-jobqueue (extra
        ``hpc``). ``kubernetes``: pods through dask-kubernetes (extra ``kubernetes``).
    n_workers : int
        ``local``: worker processes. ``slurm``/``pbs``: batch JOBS, each running
        ``processes`` workers (so ``n_workers * processes`` workers in all).
        ``kubernetes``: worker pods.
    memory_limit : str or None
        Local: memory per worker (``"2GiB"``, ``"auto"``) or None for no limit.
    address : str or None
        Scheduler address (``tcp://host:8786``); required by ``address`` mode only.
    worker_env : dict
        Extra environment variables for the workers (on top of :data:`BLAS_ENV`); in job
        scripts the values are shell-quoted, so spaces and ``$`` arrive unchanged.
    cores : int or None
        Batch: CPU cores per job (``#SBATCH --cpus-per-task``, ``#PBS ncpus``).
    memory : str or None
        Batch: memory per job (``"4GiB"``; ``#SBATCH --mem``), shared by its workers.
    processes : int or None
        Batch: worker processes per job; default ``cores`` (one single-threaded worker
        per core, the solver's best layout).
    walltime : str or None
        Batch: wall-clock limit per job, ``HH:MM:SS`` (``#SBATCH -t``).
    queue, account : str or None
        Batch: partition/queue (``-p``) and account (``-A``).
    interface : str or None
        Batch: network interface the workers listen on (``ib0``, ``eth0``).
    scheduler_interface : str or None
        Batch: network interface of the scheduler (this process); default ``interface``.
        Set it when the login node lacks the workers' interface.
    job_name : str
        Batch: job name (``#SBATCH -J``); ``squeue -n <name>`` lists kinefit's jobs.
    python : str or None
        Batch: the Python that runs ``distributed.cli.dask_worker`` on the nodes; default
        this process's interpreter (``sys.executable``), which the nodes must see.
    job_script_prologue : tuple of str
        Batch: shell lines run before the worker starts (``module load ...``, ``source
        venv/bin/activate``), after the user's dask-jobqueue prologue.
    log_directory : str or None
        Batch: folder of the job logs (``<job_name>-<id>.out`` / ``.err``); default
        ``~/.kinefit/jobs``. Must be visible to the nodes.
    lifetime : float or None
        Batch: seconds after which a worker leaves by itself (dask ``--lifetime``; its
        tasks move to other workers and kinefit submits a replacement job). Set it a few
        minutes below ``walltime``; None lets the walltime end the worker.
    startup_timeout : float
        Batch: seconds kinefit waits for a first worker (and, mid-run, for a worker
        while it has none) before failing with the jobs' state and reason from the
        scheduler. Default :data:`STARTUP_TIMEOUT_S` (300 s).
    job_extra_directives : tuple of str
        Batch: extra ``#SBATCH``/``#PBS`` lines, after the user's dask-jobqueue ones.
    image, namespace
        Kubernetes: worker image and namespace.
    dashboard_address : str
        Where the scheduler serves its dashboard and HTTP endpoints; the default
        ``":0"`` picks a free port (``client.dashboard_link``), so clusters never clash.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: Literal["local", "address", "slurm", "pbs", "kubernetes"] = "local"
    n_workers: int = Field(2, ge=0)
    memory_limit: str | None = "auto"
    address: str | None = None
    worker_env: dict[str, str] = Field(default_factory=dict)
    cores: int | None = Field(None, ge=1)
    memory: str | None = None
    processes: int | None = Field(None, ge=1)
    walltime: str | None = None
    queue: str | None = None
    account: str | None = None
    interface: str | None = None
    scheduler_interface: str | None = None
    job_name: str = "kinefit-worker"
    python: str | None = None
    job_script_prologue: tuple[str, ...] = ()
    log_directory: str | None = None
    lifetime: float | None = Field(None, gt=0)
    startup_timeout: float = Field(STARTUP_TIMEOUT_S, gt=0)
    job_extra_directives: tuple[str, ...] = ()
    image: str = "ghcr.io/dask/dask:latest"
    namespace: str | None = None
    dashboard_address: str = ":0"

    @model_validator(mode="after")
    def _check(self) -> ClusterConfig:
        if self.mode == "address" and not self.address:
            raise ValueError("mode 'address' needs address (e.g. tcp://127.0.0.1:8786)")
        if self.mode != "address" and self.address:
            raise ValueError(f"address is only used by mode 'address', not {self.mode!r}")
        if self.mode == "local" and self.n_workers > local_worker_limit():
            raise ValueError(
                f"n_workers: {self.n_workers} local worker processes on a machine of "
                f"{os.cpu_count() or 1} cores; at most {local_worker_limit()} (0: this process)"
            )
        if self.address and not _ADDRESS.fullmatch(self.address):
            raise ValueError(
                f"address {self.address!r} is not a scheduler address such as "
                "tcp://127.0.0.1:8786 (protocol://host:port, port 1-65535)"
            )
        if self.cores and self.processes and self.processes > self.cores:
            raise ValueError(
                f"processes ({self.processes}) per job exceeds its cores ({self.cores})"
            )
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

    @property
    def batch(self) -> bool:
        """True for the batch-job modes (``slurm``, ``pbs``)."""
        return self.mode in ("slurm", "pbs")


def local_worker_limit(cpus: int | None = None) -> int:
    """The most local worker processes a config may ask for: 4 per core, at least 16."""
    cpus = os.cpu_count() if cpus is None else cpus
    return max(16, 4 * (cpus or 1))


def session_width(n_frames: int, n_individuals: int = 1, cpus: int | None = None) -> int:
    """Local worker processes for a session when no cluster is named.

    0 (fit in this process) for a small session (:data:`IN_PROCESS_MAX_FRAMES`), else
    :func:`machine_width`.

    Parameters
    ----------
    n_frames, n_individuals : int
        The session's size; the solver's work grows with their product.
    cpus : int, optional
        As for :func:`machine_width`.

    Returns
    -------
    int
    """
    if n_frames * max(n_individuals, 1) <= IN_PROCESS_MAX_FRAMES:
        return 0
    return machine_width(cpus)


def machine_width(cpus: int | None = None, cap: int = MAX_MACHINE_WORKERS) -> int:
    """Local worker processes for a run that names no cluster: one per core, 1 to ``cap``.

    Parameters
    ----------
    cpus : int, optional
        Cores of the machine (default :func:`os.cpu_count`; unknown counts as 1).
    cap : int
        At most this many workers (:data:`MAX_MACHINE_WORKERS`).

    Returns
    -------
    int
        At least 1.
    """
    cpus = os.cpu_count() if cpus is None else cpus
    return max(1, min(cpus or 1, cap))


def describe(exc: ValidationError) -> str:
    """One line per pydantic error (``field: message``), naming the valid fields."""
    parts = [f"{'.'.join(map(str, e['loc'])) or 'config'}: {e['msg']}" for e in exc.errors()]
    if any(e["type"] == "extra_forbidden" for e in exc.errors()):
        parts.append(f"valid settings: {', '.join(ClusterConfig.model_fields)}")
    return "; ".join(parts)
