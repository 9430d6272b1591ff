"""``kinefit serve``: a Prefect deployment of ``reprocess_archive_flow`` on a cron schedule.

Prefect's ephemeral server never schedules runs, so scheduled runs need a real server.
With ``PREFECT_API_URL`` set, :func:`serve` uses that server. Without it,
:func:`start_local_server` runs ``prefect server start`` as a child process (SQLite under
kinefit's Prefect home, :mod:`flows.env`), waits until its health check answers, and
:func:`stop_local_server` stops it, by its PID, when serving ends (Ctrl-C or SIGTERM). The
server's PID is written to ``<PREFECT_HOME>/kinefit-server.pid`` while it runs, its log to
``<PREFECT_HOME>/kinefit-server.log``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.config import RunConfig
from pipeline.errors import ServerError

PID_FILE = "kinefit-server.pid"
LOG_FILE = "kinefit-server.log"


@dataclass(frozen=True)
class LocalServer:
    """A ``prefect server start`` child process.

    Attributes
    ----------
    process : subprocess.Popen
    url : str
        Base URL (``http://127.0.0.1:4200``); the UI is served there.
    home : Path
        Its ``PREFECT_HOME`` (SQLite database, PID and log files).
    """

    process: subprocess.Popen
    url: str
    home: Path

    @property
    def api_url(self) -> str:
        """The API URL to put in ``PREFECT_API_URL``."""
        return f"{self.url}/api"


def free_port(preferred: int | None = 4200) -> int:
    """``preferred`` on 127.0.0.1 if no process listens there, else an error naming it.

    ``None`` picks any free port. The probe sets ``SO_REUSEADDR`` (as the server will), so
    sockets of a server stopped a moment ago (``TIME_WAIT``) do not count as taken.
    """
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", preferred or 0))
        except OSError as exc:
            holder = port_holder(preferred or 0)
            raise ServerError(
                f"port {preferred} on 127.0.0.1 is taken"
                + (f" by {holder}" if holder else "")
                + f" ({exc.strerror}); stop it or pass --port"
            ) from exc
        return int(sock.getsockname()[1])


def port_holder(port: int) -> str | None:
    """``pid 1234 (prefect server start ...)`` of the process listening on ``port``, if known.

    Reads Linux's ``/proc``; ``None`` elsewhere, or when the process is not ours to see.
    """
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":
                    inodes.add(f"socket:[{fields[9]}]")
    for proc in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            if any(os.readlink(fd) in inodes for fd in (proc / "fd").iterdir()):
                command = " ".join((proc / "cmdline").read_bytes().decode().split("\0"))
                return f"pid {proc.name} ({' '.join(command.split())[:80]})"
    return None


def healthy(api_url: str, timeout: float = 2.0) -> bool:
    """True if the Prefect API at ``api_url`` answers its health check."""
    try:
        with urllib.request.urlopen(f"{api_url}/health", timeout=timeout) as response:
            return response.status == 200
    except OSError:
        return False


def start_local_server(
    home: str | Path, port: int | None = 4200, timeout: float = 120.0
) -> LocalServer:
    """Start ``prefect server start`` (SQLite in ``home``) and wait until it is healthy.

    The UI is on unless ``PREFECT_SERVER_UI_ENABLED=false`` is set. The server runs in
    its own session (process group), so a Ctrl-C in the terminal reaches ``kinefit
    serve`` only, which then stops the server itself.

    Raises
    ------
    ServerError
        The process exited or did not answer within ``timeout`` seconds (it is stopped;
        the message points at its log).
    """
    home = Path(home)
    home.mkdir(parents=True, exist_ok=True)
    port = free_port(port)
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env["PREFECT_HOME"] = str(home)
    log = home / LOG_FILE
    command = [sys.executable, "-m", "prefect", "server", "start"]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    with open(log, "wb") as handle:
        process = subprocess.Popen(
            command,
            env=env,
            stdout=handle,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    server = LocalServer(process, f"http://127.0.0.1:{port}", home)
    (home / PID_FILE).write_text(f"{process.pid}\n")
    deadline = time.monotonic() + timeout
    while not healthy(server.api_url):
        if process.poll() is not None or time.monotonic() > deadline:
            stop_local_server(server)
            what = "exited" if process.returncode is not None else f"did not answer in {timeout}s"
            raise ServerError(f"the local Prefect server {what}; see its log {log}")
        time.sleep(0.5)
    return server


def stop_local_server(server: LocalServer, timeout: float = 20.0) -> None:
    """Stop the server by its PID: SIGTERM to its process group, SIGKILL after ``timeout``."""
    process = server.process
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)  # the group it leads (start_new_session)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout)
    pid_file = server.home / PID_FILE
    if pid_file.exists() and pid_file.read_text().strip() == str(process.pid):
        pid_file.unlink()


@contextlib.contextmanager
def prefect_server(home: str | Path, port: int | None = 4200) -> Iterator[str]:
    """Yield the Prefect API URL to use: ``PREFECT_API_URL`` if set, else a local server's.

    A local server is started here and stopped on exit; ``PREFECT_API_URL`` is set in this
    process's environment meanwhile (before prefect is imported, so it takes effect).
    """
    given = os.environ.get("PREFECT_API_URL")
    if given:
        yield given
        return
    server = start_local_server(home, port)
    os.environ["PREFECT_API_URL"] = server.api_url
    try:
        yield server.api_url
    finally:
        os.environ.pop("PREFECT_API_URL", None)
        stop_local_server(server)


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def serve(config: RunConfig, flow: Any = None) -> None:
    """Serve ``reprocess_archive_flow`` as the deployment ``config.schedule.deployment``.

    Blocks until interrupted. The deployment runs ``config`` (every path absolute) on
    ``config.schedule.cron`` in ``config.schedule.timezone``; runs can also be started
    from the Prefect UI or API. ``flow`` is the flow object to serve, by default
    ``reprocess_archive_flow`` itself; ``kinefit serve`` passes it with the hooks that
    print each run's lines (:func:`flows.serve_hooks.served_flow`). Prefect's runner starts each
    run in a subprocess that inherits this process's environment.
    """
    from prefect.deployments.runner import EntrypointType  # noqa: TID251
    from prefect.schedules import Cron  # noqa: TID251

    from flows.archive import reprocess_archive_flow

    signal.signal(signal.SIGTERM, _raise_interrupt)
    schedule = config.schedule
    with contextlib.suppress(KeyboardInterrupt):
        (flow or reprocess_archive_flow).serve(
            print_starting_message=False,
            name=schedule.deployment,
            schedules=[Cron(schedule.cron, timezone=schedule.timezone)],
            parameters={"config": config.model_dump(mode="json")},
            description=f"kinefit: reprocess {config.archive.path} into {config.outputs.root}",
            tags=["kinefit"],
            entrypoint_type=EntrypointType.MODULE_PATH,
        )
