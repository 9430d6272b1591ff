"""``make notebook`` reaches a running JupyterLab from another folder, as root too.

The README's notebook command is run as printed by the demo (``make -C <checkout>
notebook FITS=...``) from ``/``, on a free port; the test reads the address JupyterLab
prints, asks the server for its status with that token, and stops it. JupyterLab refuses
to start as root without ``--allow-root``, which the target passes for root only.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _status(url: str, until: float) -> dict:
    """The server's ``/api/status``; JupyterLab prints its address just before it listens."""
    while True:
        try:
            with urllib.request.urlopen(url, timeout=30) as answer:
                assert answer.status == 200
                return json.load(answer)
        except urllib.error.URLError:
            if time.monotonic() > until:
                raise
            time.sleep(0.5)


def test_make_notebook_serves_the_fits_headless(tmp_path):
    port = _free_port()
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    env["JUPYTER_CONFIG_DIR"] = str(tmp_path / "config")
    command = ["make", "-C", str(ROOT), "notebook", f"FITS={tmp_path}", f"NOTEBOOK_PORT={port}"]
    server = subprocess.Popen(
        command,
        cwd="/",
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 120
        address = None
        while address is None and time.monotonic() < deadline:
            line = server.stdout.readline()
            if not line:
                break  # the server ended
            lines.append(line)
            found = re.search(rf"(http://127\.0\.0\.1:{port}/lab\?token=\w+)", line)
            address = found and found.group(1)
        assert address, "".join(lines)
        token = address.split("token=")[1]
        url = f"http://127.0.0.1:{port}/api/status?token={token}"
        status = _status(url, until=time.monotonic() + 30)
        assert "started" in status
        printed = "".join(lines)
        assert f"JupyterLab on the fits in {tmp_path}" in printed
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
