"""Watching a batch cluster: fail fast when its jobs cannot start, replace lost jobs.

A :class:`JobWatch` belongs to one dask-jobqueue cluster. :meth:`JobWatch.wait_for_workers`
blocks until a first worker connects, or raises :class:`~pipeline.errors.ClusterError`
naming the cause: a refused submission (at once), jobs that ended without starting a
worker (``FAILED 127`` with the tail of the job log, at once), or jobs still queued after
``startup_timeout`` (``PD (PartitionConfig)``). While tasks run, :meth:`JobWatch.check`
(called by :func:`pipeline.cluster.run_tasks` about once a second, from any thread)
resubmits jobs that ended after their worker started (walltime, ``--lifetime``, a lost
node), so the fit finishes; it fails when a replacement cannot start, or when no worker
has been connected for ``startup_timeout`` seconds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from pipeline.cluster.jobs import JobState, job_states, log_tail
from pipeline.errors import ClusterError

#: Seconds between two looks at the queue.
POLL_S = 2.0


class JobWatch:
    """Start-up and liveness of a dask-jobqueue cluster's jobs.

    Parameters
    ----------
    cluster : dask_jobqueue.JobQueueCluster
        Made by :func:`pipeline.cluster.jobqueue.jobqueue_cluster` (it has a ``ledger``).
    n_jobs : int
        Jobs the cluster should keep: lost ones are replaced up to this number.
    startup_timeout : float
        Seconds to wait for a worker while none is connected.
    """

    def __init__(self, cluster: Any, n_jobs: int, startup_timeout: float) -> None:
        self.cluster = cluster
        self.ledger = cluster.ledger
        self.n_jobs = n_jobs
        self.startup_timeout = startup_timeout
        self.started: set[str] = set()  # job ids that had a worker connected
        self.replaced = 0
        self.error: ClusterError | None = None
        self._lock = threading.Lock()
        self._last = 0.0
        self._alone_since: float | None = time.monotonic()  # no worker since then
        self._refused_seen = 0
        self.failed_starts = 0  # jobs that ended without a worker
        self.states: dict[str, JobState] = {}
        self._ended: set[str] = set()

    def _jobs(self) -> dict[str, Any]:
        """Job name -> Job object (dask-jobqueue's, with ``job_id``)."""
        return dict(self.cluster.workers)

    def _connected(self) -> int:
        """Connected workers; marks the jobs they run in as started."""
        names = [w.get("name") for w in self.cluster.scheduler_info.get("workers", {}).values()]
        for job_name, job in self._jobs().items():
            if job.job_id and any(
                str(n) == job_name or str(n).startswith(f"{job_name}-") for n in names
            ):
                self.started.add(str(job.job_id))
        return len(names)

    def _describe(self, states: dict[str, JobState], tails: bool) -> str:
        parts = []
        for state in states.values():
            tail = log_tail(state) if tails and not state.active else ""
            parts.append(state.describe() + (f"; log {tail}" if tail else ""))
        return "; ".join(parts)

    def _fail(self, message: str) -> ClusterError:
        self.error = ClusterError(message)
        return self.error

    def _current_states(self) -> dict[str, JobState]:
        ids = [str(j.job_id) for j in self._jobs().values() if j.job_id]
        return job_states(self.ledger.kind, ids)

    def _poll(self, starting: bool) -> int:
        """One look at the workers and the queue; raises when there is no way forward."""
        if self.error is not None:
            raise self.error
        scheduler = self.ledger.scheduler
        connected = self._connected()
        now = time.monotonic()
        if connected:
            self._alone_since = None
        elif self._alone_since is None:
            self._alone_since = now
        refused = self.ledger.refused[self._refused_seen :]
        self._refused_seen += len(refused)
        if refused and not connected:
            raise self._fail(refused[0])
        states = self._current_states()
        if not connected and states:
            failed = [s for s in states.values() if not s.active and s.job_id not in self.started]
            if len(failed) == len(states):
                raise self._fail(
                    f"the {scheduler} worker jobs ended before a worker started: "
                    + self._describe(states, tails=True)
                )
        if not connected and self._alone_since is not None:
            waited = now - self._alone_since
            if waited > self.startup_timeout:
                what = "started" if starting else "came back"
                raise self._fail(
                    f"no {scheduler} worker {what} within {self.startup_timeout:g} s "
                    f"(cluster.startup_timeout): "
                    + (self._describe(states, tails=True) or "no job was submitted")
                )
        self.states = states
        lost = [
            name
            for name, job in self._jobs().items()
            if job.job_id in states and not states[job.job_id].active
        ]
        ended = {str(self._jobs()[n].job_id) for n in lost} - self._ended
        self._ended |= ended
        self.failed_starts += len(ended - self.started)
        if (lost or refused) and self.failed_starts <= 2 * self.n_jobs:
            self._replace(lost)
        return connected

    def _replace(self, names: list[str]) -> None:
        """Drop ended (and refused) jobs; submit new ones under new names."""
        from distributed.utils import sync

        cluster = self.cluster

        async def replace() -> None:
            refused = [n for n, job in cluster.workers.items() if not job.job_id]
            for name in [*names, *refused]:
                cluster.worker_spec.pop(name, None)
                cluster.workers.pop(name, None)
            while len(cluster.worker_spec) < self.n_jobs:
                # a new name: SpecCluster closes a job that reuses a lost worker's name
                # (its lost-worker-timeout callback), so replacements never reuse one
                cluster._i += 1
                cluster.worker_spec.update(cluster.new_worker_spec())
            await cluster._correct_state()

        self.replaced += len(names)
        sync(cluster.loop, replace)

    def check(self) -> None:
        """Throttled :meth:`_poll` for running tasks; raises the watch's error, once set."""
        if self.error is not None:
            raise self.error
        if not self._lock.acquire(blocking=False):
            return
        try:
            if time.monotonic() - self._last >= POLL_S:
                self._last = time.monotonic()
                self._poll(starting=False)
        finally:
            self._lock.release()

    def wait_for_workers(self, status: Callable[[str], None] | None = None) -> None:
        """Block until a worker connects; :class:`ClusterError` naming why none will."""
        self._alone_since = time.monotonic()
        while True:
            with self._lock:
                if self._poll(starting=True):
                    return
            if status:
                status(
                    f"waiting for {len(self.ledger.ids)} {self.ledger.scheduler} job(s): "
                    + (self._describe(self.states, tails=False) or "submitting")
                )
            time.sleep(0.5)
