"""Prefect's ephemeral server, started by kinefit, is deaf to SIGINT and stopped at exit."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = """
import os, signal, sys, time
from flows.env import prepare_prefect_env
prepare_prefect_env()
from flows.ephemeral import start_ephemeral_server
from flows.server import healthy
start = start_ephemeral_server()
url = start.wait()
pid = start._server.server_process.pid
os.kill(pid, signal.SIGINT)  # a terminal's Ctrl-C reaches the child too
time.sleep(1.0)
print(pid, healthy(url), flush=True)
"""


@pytest.mark.slow
def test_the_ephemeral_server_ignores_sigint_and_goes_with_kinefit(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env["KINEFIT_HOME"] = str(tmp_path / "home")
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stdout + done.stderr
    pid, answered = done.stdout.split()
    assert answered == "True"  # still serving after the SIGINT
    assert "Traceback" not in done.stderr, done.stderr
    deadline = time.monotonic() + 20
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{pid}").exists()  # stopped when its parent exited
