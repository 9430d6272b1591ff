"""The one place where kinefit quiets other libraries' logs (unless ``verbose``).

kinefit prints its own lines (progress, the summary, failures by name); left alone, a run
also prints Prefect's INFO line for every flow and task run (and its ephemeral server's
start and stop), distributed's scheduler, nanny and worker INFO lines, shutdown
tracebacks as a cluster closes, and OpenSim's console lines on standard output (with an
``opensim.log`` in the current folder). The command line (``--verbose`` brings them
back) and the flows called from Python (``verbose=True`` brings them back, or any
logging configuration set after the call) use the same functions:

- :func:`quiet_library_logs`: all of the below, for the rest of the process, and
  :data:`CHILD_ENV` for the processes it starts;
- :func:`quiet_prefect_console`: Prefect's console handler (its API handler still gets
  every line, so the Prefect UI has them all);
- :func:`quiet_dask_logs`: distributed's loggers; local workers started afterwards take
  their level from them (:mod:`pipeline.cluster.client`);
- :func:`quiet_opensim`: OpenSim's logger and file sink.

Imports nothing heavy at module level (no numpy, no prefect, no distributed).
"""

from __future__ import annotations

import importlib.abc
import logging
import os
import sys
from typing import Any

__all__ = [
    "CHILD_ENV",
    "DASK_LOGGERS",
    "PREFECT_LOGGERS",
    "SHUTDOWN_LOGGERS",
    "quiet_children",
    "quiet_dask_logs",
    "quiet_library_logs",
    "quiet_opensim",
    "quiet_prefect_console",
]

#: distributed's loggers quieted to ERROR, and those quieted to CRITICAL (shutdown noise).
DASK_LOGGERS = ("distributed", "dask_jobqueue", "tornado")
SHUTDOWN_LOGGERS = (
    "distributed.core",
    "distributed.comm",
    "distributed.batched",
    "tornado.application",  # "Exception in callback" tracebacks as the loop closes
    "asyncio",
)
#: The loggers Prefect's console handler hangs on.
PREFECT_LOGGERS = ("", "prefect", "prefect.flow_runs", "prefect.task_runs")
#: The environment of the processes started once quiet (set if not set). Prefect's
#: documented override of its ``logging.yml`` (``PREFECT_LOGGING_[PATH]_[KEY]``), read
#: when such a process imports prefect: a Dask worker spawned from a script that imports
#: the flows imports prefect too (it imports the script again), and its distributed INFO
#: lines would reach Prefect's console handler on the root logger before a worker plugin
#: could quiet them; a served run's process prints nothing of Prefect's from its first line.
CHILD_ENV: dict[str, str] = {"PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "CRITICAL"}


def quiet_library_logs(verbose: bool = False) -> None:
    """Prefect's console, distributed and OpenSim quiet for the process unless ``verbose``.

    What ``kinefit reprocess`` and ``kinefit demo`` do before a run, and
    :func:`flows.archive.reprocess_archive` before its flow starts.

    Parameters
    ----------
    verbose : bool
        Leave every library's logging as it is (Prefect's INFO lines, distributed's...).
    """
    if verbose:
        return
    quiet_prefect_console()
    quiet_dask_logs()
    quiet_opensim()
    quiet_children()


def quiet_children() -> None:
    """:data:`CHILD_ENV` into ``os.environ`` (``setdefault``) for the processes started next."""
    for key, value in CHILD_ENV.items():
        os.environ.setdefault(key, value)


def quiet_prefect_console(level: int = logging.CRITICAL) -> None:
    """Prefect's console handler to ``level`` (the API handler still gets every line).

    kinefit prints its own progress and summary, failures included; Prefect's per-task
    ERROR lines and the failed run's traceback would say the same again, louder.
    """
    from prefect.logging.handlers import PrefectConsoleHandler  # noqa: TID251

    for name in PREFECT_LOGGERS:
        for handler in logging.getLogger(name).handlers:
            if isinstance(handler, PrefectConsoleHandler):
                handler.setLevel(level)


def quiet_dask_logs(verbose: bool = False) -> None:
    """Distributed's INFO lines and shutdown tracebacks off the terminal unless ``verbose``."""
    if verbose:
        return
    import distributed  # noqa: F401 - importing it sets the logger levels overridden here

    for name in DASK_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    for name in SHUTDOWN_LOGGERS:  # CommClosedError tracebacks when jobs are cancelled
        logging.getLogger(name).setLevel(logging.CRITICAL)


def quiet_opensim(verbose: bool = False) -> None:
    """OpenSim's logger off (no console lines, no ``opensim.log``) unless ``verbose``.

    OpenSim logs to standard output (``[info] Set log level to Info.`` whenever a level
    is set, so ``kinefit body-plan map T.zarr model.osim > map.yaml`` would write
    invalid YAML) and to a file sink that creates ``opensim.log`` in the current folder
    at its first message. Importing opensim takes a second, so it is not imported here:
    if it is loaded already its logger is turned off now, else as soon as it is imported.
    """
    if verbose:
        return
    module = sys.modules.get("opensim")
    if module is not None:
        _opensim_off(module)
    elif not any(isinstance(f, _OpenSimOff) for f in sys.meta_path):
        sys.meta_path.insert(0, _OpenSimOff())


def _opensim_off(opensim: Any) -> None:
    opensim.Logger.removeFileSink()
    opensim.Logger.setLevelString("off")


class _OpenSimOff(importlib.abc.MetaPathFinder):
    """Finds ``opensim`` as the other finders do, and turns its logger off once loaded."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        """The spec of ``opensim`` with a loader that quiets it; None for other modules."""
        if fullname != "opensim":
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = None if finder is self or find is None else find(fullname, path, target)
            if spec is not None and spec.loader is not None:
                break
        else:
            return None
        loader, exec_module = spec.loader, spec.loader.exec_module

        def exec_and_quiet(module: Any) -> None:
            exec_module(module)
            _opensim_off(module)

        loader.exec_module = exec_and_quiet  # this spec's own loader instance
        return spec
