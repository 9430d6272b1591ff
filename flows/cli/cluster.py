"""What ``kinefit fit`` and ``kinefit reprocess`` share about clusters and interrupts.

- :func:`interruptible`: SIGTERM behaves like Ctrl-C (``KeyboardInterrupt``), and both
  stop the tasks that other threads wait for (:func:`pipeline.cluster.interrupt`), so the
  cluster is closed and every batch job cancelled within seconds; the error guard then
  exits with status 130.
- :func:`check_workers_option`: ``--workers N`` means local worker processes; with a
  SLURM/PBS/Kubernetes config it is an error naming the ``--set`` that changes the job
  count, never a silent switch to a local cluster.

Imports nothing heavy at module level.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pipeline.errors import ConfigError


@contextmanager
def interruptible() -> Iterator[None]:
    """Within: SIGINT and SIGTERM raise ``KeyboardInterrupt`` and stop running tasks."""
    from pipeline.cluster import clear_interrupt, interrupt

    def handler(signum: int, frame: Any) -> None:
        interrupt()
        raise KeyboardInterrupt(signal.Signals(signum).name)

    signals = (signal.SIGINT, signal.SIGTERM)
    previous = {s: signal.getsignal(s) for s in signals}
    clear_interrupt()
    for s in signals:
        signal.signal(s, handler)
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def check_workers_option(workers: int | None, cluster: Any) -> None:
    """Refuse ``--workers`` when the config's cluster is not a local one."""
    if workers is None or cluster.mode in ("local", "address"):
        return
    what = "jobs" if cluster.batch else "pods"
    raise ConfigError(
        f"--workers {workers} means local worker processes, but the config's cluster is "
        f"mode {cluster.mode!r}; to change the number of {cluster.mode.upper()} {what} use "
        f"--set cluster.n_workers={workers}, to fit on this machine --set cluster.mode=local"
    )
