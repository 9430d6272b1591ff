"""Acceptance 4: a real multi-process cluster (`dask scheduler` + two `dask worker`s).

The processes are started here on 127.0.0.1 and stopped by their PIDs. The first fit's
chunk task is a fault wrapper (``tests/fixtures/faults.py``) that loses one chunk; the
rerun resumes it on the same cluster.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from distributed import get_task_stream

from pipeline.bodyplan import load_body_plan
from pipeline.cluster import PRE_SPAWN_ENV, ClusterConfig, close_client, make_client
from pipeline.fit import FitError, fit_session
from pipeline.solve import SolverConfig
from pipeline.store import write_tracks
from pipeline.store.fit import open_fit
from pipeline.synth import SynthConfig, synthesize
from tests.fixtures.faults import FailChunks

ROOT = Path(__file__).resolve().parents[3]
DASK = Path(sys.executable).with_name("dask")


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def _wait_for(predicate, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def scheduler_address(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cluster")
    scheduler_file = folder / "scheduler.json"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),  # the checkout, as in the test process
        "DASK_DISTRIBUTED__NANNY__PRE_SPAWN_ENVIRON": json.dumps(PRE_SPAWN_ENV),
    }
    logs = open(folder / "cluster.log", "w")  # noqa: SIM115 - closed in the finalizer
    processes = [
        subprocess.Popen(
            [
                str(DASK),
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--dashboard-address",
                ":0",
                "--scheduler-file",
                str(scheduler_file),
            ],
            env=env,
            stdout=logs,
            stderr=subprocess.STDOUT,
        )
    ]
    try:
        _wait_for(scheduler_file.exists, "the scheduler file")
        for _ in range(2):
            processes.append(
                subprocess.Popen(
                    [
                        str(DASK),
                        "worker",
                        "--scheduler-file",
                        str(scheduler_file),
                        "--host",
                        "127.0.0.1",
                        "--nthreads",
                        "1",
                        "--nworkers",
                        "1",
                        "--dashboard-address",
                        ":0",
                        "--local-directory",
                        str(folder),
                    ],
                    env=env,
                    stdout=logs,
                    stderr=subprocess.STDOUT,
                )
            )
        address = json.loads(scheduler_file.read_text())["address"]
        yield address
    finally:
        for process in reversed(processes):
            _stop(process)
        logs.close()


def test_fit_through_address_mode_on_a_real_cluster(scheduler_address, fly_plan_path, tmp_path):
    plan = load_body_plan(fly_plan_path)
    synth = synthesize(
        plan, SynthConfig(n_frames=300, n_individuals=2, noise=0.002), np.random.default_rng(21)
    )
    tracks = write_tracks(synth.tracks, tmp_path / "t.zarr", chunk_frames=100)
    client = make_client(ClusterConfig(mode="address", address=scheduler_address))
    try:
        client.wait_for_workers(2, timeout=60)
        out = tmp_path / "fit.zarr"
        faulty = FailChunks.of([1], once_dir=tmp_path)  # pickled to the workers
        with pytest.raises(FitError, match=r"1 of 3 chunks failed \(\[1\]\)"):
            fit_session(tracks, plan, SolverConfig(), out, client=client, chunk_task=faulty)
        with get_task_stream(client) as stream:
            report = fit_session(
                tracks, plan, SolverConfig(), out, client=client, chunk_task=faulty
            )
        assert report.chunks_fitted == (1,)
        assert len({task["worker"] for task in stream.data}) == 2  # both workers had work
        assert not any(client.run(lambda: "prefect" in sys.modules).values())
    finally:
        close_client(client)
    reference = tmp_path / "reference.zarr"
    fit_session(tracks, plan, SolverConfig(), reference)  # in this process, uninterrupted
    xr.testing.assert_identical(
        open_fit(out).drop_attrs().load(), open_fit(reference).drop_attrs().load()
    )
