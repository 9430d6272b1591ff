"""Worker plugins kinefit registers on the clusters it starts (imports distributed)."""

from __future__ import annotations

import logging
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from pipeline.solve.compiled import warm_up

__all__ = ["QuietWorkerLogs", "SolverPreload"]


class QuietWorkerLogs(WorkerPlugin):
    """Raise a worker's ``distributed`` loggers to ``level`` (a failed task is not logged).

    kinefit reports a failed task once, from its future; a local worker would also print
    distributed's ``Compute Failed`` block with the traceback to the same terminal.
    """

    name = "kinefit-quiet-logs"

    def __init__(self, level: int = logging.CRITICAL) -> None:
        self.level = level

    def setup(self, worker: Any) -> None:
        """Set the levels on the worker that registers the plugin."""
        for name in ("distributed", "distributed.worker", "distributed.nanny"):
            logging.getLogger(name).setLevel(self.level)


class SolverPreload(WorkerPlugin):
    """Load (or compile) the compiled solver's kernels on a worker when it starts.

    Otherwise every worker pays about 0.5 s (1-2 minutes in a fresh environment) inside its first
    fit task (:func:`pipeline.solve.compiled.warm_up`).
    """

    name = "kinefit-solver-preload"

    def setup(self, worker: Any) -> None:
        """Warm the solver up on the worker that registers the plugin."""
        warm_up()
