"""What one served run prints: kinefit's own lines, the library logs only with ``--verbose``.

Prefect's runner starts each run of ``kinefit serve``'s deployment in a subprocess, which
must be quieted too (:mod:`flows.serve_hooks`). One real Prefect server (kinefit's
:func:`~flows.server.start_local_server`) is shared by two ``kinefit serve`` processes,
one plain and one ``--verbose``, each on a local cluster of one worker; each serves its
own deployment, runs it once (triggered through the API, both at once), and is stopped
(SIGTERM to its PID) after that run printed its summary; the output from the trigger to
"stopped serving" is checked.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from flows.logs import CHILD_ENV
from flows.server import start_local_server, stop_local_server
from tests.fixtures.flows_samples import demo_archive

pytestmark = pytest.mark.timeout(420)
TERMINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}
#: What only the libraries print: distributed's loggers, Prefect's console lines.
LIBRARY_LINES = ("distributed.", "| INFO    |", "Beginning flow run")


def _api(url: str, path: str, body: dict | None = None) -> object:
    """One call of the Prefect REST API (retried while a busy server answers 503)."""
    data = None if body is None else json.dumps(body).encode()
    for _ in range(60):
        request = urllib.request.Request(
            f"{url}{path}", data=data, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            if exc.code != 503:
                raise
        time.sleep(1.0)
    raise TimeoutError(f"{path}: 503 for a minute")


def _until(predicate, timeout: float, what: str, process: subprocess.Popen, log: Path):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if process.poll() is not None:
            pytest.fail(f"kinefit serve exited before {what}:\n{log.read_text()[-3000:]}")
        time.sleep(0.5)
    pytest.fail(f"timed out waiting for {what}:\n{log.read_text()[-3000:]}")


@dataclass
class Served:
    """A ``kinefit serve`` subprocess serving the deployment ``name``, its output in ``log``."""

    name: str
    process: subprocess.Popen
    log: Path

    @classmethod
    def start(cls, tmp_path: Path, api: str, verbose: bool) -> Served:
        name = "verbose" if verbose else "quiet"
        config = tmp_path / f"{name}.yaml"
        config.write_text(
            "archive: {path: archive, patterns: ['walk_clean.nc']}\n"
            "cluster: {mode: local, n_workers: 1}\n"
            "chunking: {tracks_chunk_frames: 40}\n"
            f"outputs: {{root: out-{name}, write_report: false}}\n"
            f"schedule: {{deployment: {name}}}\n"
        )
        # an earlier in-process run in this worker may have quieted os.environ for its
        # children (flows.logs.CHILD_ENV): each serve starts from the user's environment
        env = {k: v for k, v in os.environ.items() if k not in CHILD_ENV}
        env |= {"PREFECT_API_URL": api, "PREFECT_LOGGING_TO_API_ENABLED": "true"}
        log = tmp_path / f"{name}.log"
        command = [sys.executable, "-m", "flows.cli", "serve", "-c", str(config)]
        with open(log, "wb") as out:
            process = subprocess.Popen(
                command + ["--verbose"] * verbose,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        return cls(name, process, log)

    def until(self, predicate, timeout: float, what: str):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            if self.process.poll() is not None:
                pytest.fail(f"{self.name}: serve exited before {what}:\n{self.output()}")
            time.sleep(0.5)
        pytest.fail(f"{self.name}: timed out waiting for {what}:\n{self.output()}")

    def output(self, start: int = 0) -> str:
        return "\n".join(self.log.read_text().splitlines()[start:])

    def trigger(self, api: str) -> tuple[str, int]:
        """Start a run once the deployment exists: (its id, the output's length before it)."""
        body = {"deployments": {"name": {"any_": [self.name]}}}
        deployment = self.until(lambda: _api(api, "/deployments/filter", body), 120, "deploy")
        start = len(self.log.read_text().splitlines())
        return _api(api, f"/deployments/{deployment[0]['id']}/create_flow_run", {})["id"], start

    def finished(self, api: str, run_id: str, start: int) -> None:
        """Wait until the run completed and printed its summary."""
        state = self.until(
            lambda: (s := _api(api, f"/flow_runs/{run_id}")["state"]["type"]) in TERMINAL and s,
            180,
            "the run",
        )
        assert state == "COMPLETED", self.output()
        self.until(lambda: "  results: " in self.output(start), 30, "the run's summary")

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


def test_a_served_run_prints_kinefits_lines_and_verbose_the_libraries_too(plan, tmp_path):
    demo_archive(tmp_path / "archive", plan, n_frames=40)
    server = start_local_server(tmp_path / "prefect-home", port=None)
    api, serving = server.api_url, []
    try:  # both serve at once: one run each, concurrently
        serving = [Served.start(tmp_path, api, verbose) for verbose in (False, True)]
        runs = [served.trigger(api) for served in serving]
        for served, run in zip(serving, runs, strict=True):
            served.finished(api, *run)
        logs = _api(api, "/logs/filter", {"logs": {"flow_run_id": {"any_": [runs[0][0]]}}})
    finally:
        for served in serving:
            served.stop()
        stop_local_server(server)
    # each output from the run's trigger until serve stopped (SIGTERM)
    quiet, verbose = (s.output(start) for s, (_, start) in zip(serving, runs, strict=True))

    lines = quiet.splitlines()
    assert len(lines) <= 6 and lines[-1] == "stopped serving", quiet
    assert "cancelled" not in quiet, quiet  # serve stopped after the run had completed
    assert "' started: reprocessing " in lines[0] and str(tmp_path / "archive") in lines[0]
    assert any(": fit 1/1 sessions" in line for line in lines), quiet
    assert any("' completed: 1 session(s), 1 fitted, 0 skipped, 0 failed" in ln for ln in lines)
    assert f"  results: fits in {tmp_path / 'out-quiet' / 'fits'}" in lines, quiet
    for noise in (*LIBRARY_LINES, "Traceback", "CommClosedError"):
        assert noise not in quiet, quiet
    # the Prefect UI still has the run's logs: only the console was quieted
    assert any(entry["message"].startswith("Beginning flow run") for entry in logs), logs

    assert "' completed: 1 session(s), 1 fitted" in verbose, verbose
    for library in LIBRARY_LINES:
        assert library in verbose, verbose
