"""Prefect's ephemeral server, started by kinefit so that a terminal's Ctrl-C never reaches it.

A one-off run (``kinefit demo``, ``kinefit reprocess``) with no ``PREFECT_API_URL`` uses
Prefect's ephemeral server: a ``python -m uvicorn`` child that Prefect starts the first time
a client is needed, in kinefit's own process group. A Ctrl-C in the terminal goes to the
whole group. When it lands while that child is still starting, the child's interpreter dies
mid-import and prints ``Fatal Python error: init_import_site`` and a traceback into
kinefit's terminal, after which kinefit's own one-line interrupt message looks like a crash.

:func:`start_ephemeral_server` starts the same server (Prefect's ``SubprocessASGIServer``,
the instance Prefect's clients then reuse) from a helper thread that blocks SIGINT, so the
child inherits a blocked SIGINT and only kinefit hears the Ctrl-C. The main thread keeps
its handlers, so Ctrl-C during the start is seen at once. Prefect stops the server when
kinefit exits (SIGTERM, from its ``atexit`` hook), interrupted or not.

Starting it in the background also overlaps its 4-15 s start with kinefit's own set-up
(loading the compiled kernels). Imports prefect only inside the functions.
"""

from __future__ import annotations

import atexit
import os
import signal
import threading
import time
from typing import Any


class EphemeralStart:
    """A start of the ephemeral server running in a helper thread; :meth:`wait` joins it."""

    def __init__(self, server: Any) -> None:
        self._server = server
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._start, name="kinefit-prefect-server")
        self._thread.daemon = True  # a Ctrl-C meanwhile must not wait for the health check
        atexit.register(self._stop)  # before the start: no exit can miss the child
        self._thread.start()

    def _start(self) -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # inherited by the child
        try:
            self._server.start()
        except BaseException as exc:  # re-raised in the caller's thread by wait()
            self._error = exc

    def _stop(self, spawn_within: float = 1.0) -> None:
        """At exit: stop the child, waiting briefly if the thread has yet to spawn it.

        Prefect's own ``atexit`` hook stops it too once it is spawned; ``stop`` is
        idempotent. The child ignores SIGINT, so nothing else would.
        """
        deadline = time.monotonic() + spawn_within
        while (
            self._thread.is_alive()
            and self._server.server_process is None
            and time.monotonic() < deadline
        ):
            time.sleep(0.01)
        self._server.stop()

    def wait(self) -> str:
        """Block until the server answers its health check; return its API URL.

        Raises
        ------
        BaseException
            Whatever the start raised (Prefect's ``RuntimeError`` on a start-up timeout).
        """
        self._thread.join()
        if self._error is not None:
            raise self._error
        return str(self._server.api_url)


def start_ephemeral_server() -> EphemeralStart | None:
    """Start Prefect's ephemeral server in the background, deaf to SIGINT.

    Returns
    -------
    EphemeralStart or None
        ``None`` when Prefect will not use an ephemeral server: ``PREFECT_API_URL`` is set,
        or ephemeral mode is off, or the server already runs (as under
        ``prefect_test_harness``).
    """
    if os.environ.get("PREFECT_API_URL"):
        return None
    from prefect.server.api.server import SubprocessASGIServer  # noqa: TID251
    from prefect.settings import (  # noqa: TID251
        PREFECT_API_URL,
        PREFECT_SERVER_EPHEMERAL_ENABLED,
    )

    if PREFECT_API_URL.value() or not PREFECT_SERVER_EPHEMERAL_ENABLED.value():
        return None
    server = SubprocessASGIServer()  # Prefect's clients get this same instance
    if server.running:
        return None
    return EphemeralStart(server)
