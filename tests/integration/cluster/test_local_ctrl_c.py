"""Local workers do not hear a terminal's Ctrl-C: kinefit closes them itself.

A Ctrl-C goes to the whole process group. Workers that heard it would each die printing a
``KeyboardInterrupt`` traceback into kinefit's terminal (it once failed CI this way).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from pipeline.cluster import ClusterConfig, close_client, make_client


def _ignores_sigint(pid: int) -> bool:
    """Whether process ``pid`` has SIGINT's disposition set to ignore (Linux ``/proc``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGINT - 1)))
    raise AssertionError(f"no SigIgn line for pid {pid}")


def test_local_workers_ignore_sigint_and_this_process_keeps_its_handler():
    before = signal.getsignal(signal.SIGINT)
    client = make_client(ClusterConfig(mode="local", n_workers=1))
    try:
        assert signal.getsignal(signal.SIGINT) is before  # restored after the start
        assert not _ignores_sigint(os.getpid())
        (pid,) = client.run(os.getpid).values()
        assert _ignores_sigint(pid)
        os.kill(pid, signal.SIGINT)  # what a terminal's Ctrl-C does to it
        time.sleep(0.5)
        assert list(client.run(os.getpid).values()) == [pid]  # the same worker, alive
        assert client.submit(sum, [1, 2]).result(timeout=30) == 3
    finally:
        close_client(client)
    deadline = time.monotonic() + 20
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{pid}").exists()  # closing the cluster stops it
