"""``kinefit serve`` for real: a local Prefect server, a cron deployment, a run via the API.

The test starts ``kinefit serve`` as a subprocess with no PREFECT_API_URL, so serve starts
its own ``prefect server start`` (SQLite in a temporary PREFECT_HOME). Every process is
stopped by its own PID: serve by SIGTERM, and the test checks that serve stopped the
server (killing it by its PID only if serve failed to).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from flows.server import PID_FILE, free_port
from tests.fixtures.flows_samples import demo_archive

pytestmark = pytest.mark.timeout(300)
TERMINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}


def _api(url: str, path: str, body: dict | None = None, patience: float = 60.0) -> object:
    """One call of the Prefect REST API; retried while the server answers 503.

    A busy local server (SQLite, a loaded 2-core machine) answers 503 Service
    Unavailable for a moment, as any HTTP client of it may see; CI hit that once.
    """
    data = None if body is None else json.dumps(body).encode()
    deadline = time.monotonic() + patience
    while True:
        request = urllib.request.Request(
            f"{url}{path}", data=data, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            if exc.code != 503 or time.monotonic() > deadline:
                raise
        time.sleep(1.0)


def _wait(predicate, timeout: float, what: str, process: subprocess.Popen, log: Path):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, ValueError):
            value = predicate()
            if value:
                return value
        if process.poll() is not None:
            pytest.fail(
                f"kinefit serve exited ({process.returncode}) before {what}:\n"
                + log.read_text()[-3000:]
            )
        time.sleep(0.5)
    pytest.fail(f"timed out waiting for {what}:\n" + log.read_text()[-3000:])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_serve_deploys_on_a_cron_schedule_and_runs(plan, tmp_path):
    demo_archive(tmp_path / "archive", plan, n_frames=40)
    config = tmp_path / "serve.yaml"
    config.write_text(
        "archive: {path: archive, patterns: ['*.nc']}\n"
        "cluster: {mode: local, n_workers: 0}\n"
        "chunking: {tracks_chunk_frames: 40}\n"
        "solver: {neutral_weight: 1.0e-6, position_tolerance: 1.0e-5}\n"
        "outputs: {root: out, write_report: false}\n"
        "schedule: {cron: '15 4 * * 1-5', timezone: Europe/Zurich, deployment: nightly-test}\n"
    )
    home = tmp_path / "prefect-home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(
        PREFECT_HOME=str(home),
        KINEFIT_HOME=str(tmp_path / "kinefit-home"),
        PREFECT_SERVER_UI_ENABLED="false",
    )
    port = free_port(None)
    url = f"http://127.0.0.1:{port}/api"
    log = tmp_path / "serve.log"
    command = [sys.executable, "-m", "flows.cli", "serve", "-c", str(config)]
    with open(log, "wb") as out:
        serve = subprocess.Popen(
            [*command, "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    server_pid = None
    try:
        server_pid = int(
            _wait(lambda: (home / PID_FILE).read_text().strip(), 120, "the server", serve, log)
        )
        deployments = _wait(
            lambda: _api(
                url, "/deployments/filter", {"deployments": {"name": {"any_": ["nightly-test"]}}}
            ),
            120,
            "the deployment",
            serve,
            log,
        )
        deployment = deployments[0]
        cron = deployment["schedules"][0]["schedule"]
        assert cron["cron"] == "15 4 * * 1-5" and cron["timezone"] == "Europe/Zurich"
        assert deployment["parameters"]["config"]["outputs"]["root"] == str(tmp_path / "out")

        run = _api(url, f"/deployments/{deployment['id']}/create_flow_run", {})
        state = _wait(
            lambda: (s := _api(url, f"/flow_runs/{run['id']}")["state"]["type"]) in TERMINAL and s,
            180,
            "the flow run",
            serve,
            log,
        )
        assert state == "COMPLETED", log.read_text()[-3000:]
        fits = sorted(p.name for p in (tmp_path / "out" / "fits").glob("*.zarr"))
        expected = ["walk_clean", "walk_dropouts", "walk_noisy", "walk_outliers"]
        assert fits == [f"{name}.zarr" for name in expected], log.read_text()[-4000:]
    finally:
        if serve.poll() is None:
            serve.send_signal(signal.SIGTERM)
            try:
                serve.wait(60)
            except subprocess.TimeoutExpired:
                serve.kill()
                serve.wait(10)
        if server_pid is not None:
            deadline = time.monotonic() + 30
            while _alive(server_pid) and time.monotonic() < deadline:
                time.sleep(0.5)
            stopped = not _alive(server_pid)
            if not stopped:
                os.killpg(server_pid, signal.SIGKILL)  # its own group, started by serve
    assert server_pid is not None and stopped, "kinefit serve left its Prefect server running"
    assert not (home / PID_FILE).exists()
    assert "stopped serving" in log.read_text()
