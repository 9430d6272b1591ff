"""Fault 1: a dask worker process killed mid-fit; the fit completes, equal to an
uninterrupted one.

A real ``dask scheduler`` and two ``dask worker`` processes (no nanny, so a worker's PID
is the worker) run on 127.0.0.1. The fit runs in a thread of this process; once some
chunks are marked done in the partial store, one worker is killed with SIGKILL by its PID.
The scheduler reschedules the lost tasks on the other worker.
"""

from __future__ import annotations

import os
import signal
import threading

from distributed import Client

from pipeline.fit import fit_session
from pipeline.store.atomic import partial_path
from tests.fixtures.reliability_fixtures import LONG_FAULT_CHUNKS, same_fit
from tests.fixtures.reliability_helpers import dask_cluster, done_count, wait_for


def test_killed_worker_mid_fit(fly, long_fault_session, solver, tmp_path):
    tracks, reference = long_fault_session
    out = tmp_path / "fit.zarr"
    partial = partial_path(out)
    with (
        dask_cluster(tmp_path / "cluster") as (sched_file, workers),
        Client(scheduler_file=sched_file, timeout=60) as client,
    ):
        client.wait_for_workers(2, timeout=60)
        outcome = {}

        def run():
            try:
                outcome["report"] = fit_session(tracks, fly, solver, out, client=client)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the test
                outcome["error"] = exc

        thread = threading.Thread(target=run)
        thread.start()
        try:
            wait_for(
                lambda: done_count(partial) >= 3 or not thread.is_alive(),
                120,
                "three chunks done",
            )
            killed = done_count(partial)
            assert thread.is_alive() and killed < LONG_FAULT_CHUNKS, "the fit ended before the kill"
            os.kill(workers[0].pid, signal.SIGKILL)
            workers[0].wait(10)
        finally:
            thread.join(180)
        assert not thread.is_alive()
        if "error" in outcome:
            raise outcome["error"]
        assert len(client.scheduler_info()["workers"]) == 1
    report = outcome["report"]
    assert not report.skipped and len(report.chunks_fitted) == LONG_FAULT_CHUNKS
    assert not partial.exists()
    same_fit(out, reference)
