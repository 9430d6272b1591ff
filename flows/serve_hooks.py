"""What a run of ``kinefit serve``'s deployment prints: kinefit's own lines.

Prefect's runner starts each run of the deployment in a process of its own
(``multiprocessing`` spawn: a new interpreter that inherits the serve process's
environment, and imports prefect, which configures logging from that environment). Left
alone, a run prints Prefect's INFO lines for every flow and task run, distributed's
scheduler and nanny INFO lines, and at times a benign ``CommClosedError`` traceback as the
run's cluster shuts down. Unless ``--verbose``, the quieting reaches the run's process
in two steps:

- :func:`quiet_serving`, in the serve process before the runner starts: its own Prefect
  console shows warnings and errors only, and ``PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL=
  CRITICAL`` goes into the environment that each run's process inherits. That is
  Prefect's documented override of its ``logging.yml`` (``PREFECT_LOGGING_[PATH]_[KEY]``),
  read when the run's process imports prefect, so Prefect's console handler prints
  nothing there from the first line (``Beginning flow run``) on. The distributed loggers
  of that process propagate to the same handler. The API handler is untouched: every
  log line still reaches the Prefect UI.
- The ``on_running`` hook of :func:`served_flow`, in the run's process before the flow's
  body: distributed's loggers as ``kinefit reprocess`` sets them
  (:func:`flows.logs.quiet_dask_logs`: ERROR, CRITICAL for the shutdown loggers),
  and warnings as one ``warning:`` line each (:class:`flows.cli.output.WarningLines`).
  The run's cluster starts after that, so its local workers log only CRITICAL
  (:mod:`pipeline.cluster.client`): a worker's heartbeat that races the scheduler's
  close logs ``Failed to communicate with scheduler during heartbeat`` with a
  ``CommClosedError`` traceback at ERROR, in the worker's process.

The hooks print, per run: that it started (with its Prefect UI link), a line per stage
(ingest, fit) when it ends and at most every :data:`PROGRESS_EVERY_S` seconds meanwhile,
and the summary (:func:`flows.cli.output.summary_lines`): sessions fitted / skipped /
failed, each failed session named, where the results are. ``on_crashed`` and
``on_cancellation`` hooks run in the serve process (Prefect runs them there for its
subprocesses) and print one line.
"""

from __future__ import annotations

import logging
import time
import warnings
from functools import partial
from typing import TYPE_CHECKING, Any

from flows.cli.output import WarningLines, q, say, summary_lines
from flows.logs import quiet_children, quiet_dask_logs, quiet_opensim, quiet_prefect_console

if TYPE_CHECKING:
    from prefect import Flow  # noqa: TID251
    from prefect.client.schemas.objects import FlowRun  # noqa: TID251
    from prefect.states import State  # noqa: TID251

#: Seconds between a stage's progress lines while it runs (its end is always printed).
PROGRESS_EVERY_S = 300.0


def quiet_serving() -> None:
    """In the serve process: Prefect's console to WARNING, the runs' processes quiet.

    The runs' processes inherit :data:`flows.logs.CHILD_ENV`.
    """
    quiet_prefect_console(logging.WARNING)
    quiet_children()


def served_flow(flow: Flow, verbose: bool = False) -> Flow:
    """``flow`` (``reprocess_archive_flow``) with the hooks that print kinefit's run lines.

    Parameters
    ----------
    flow : prefect.Flow
        The flow to serve; its own hooks are kept and run first.
    verbose : bool
        Leave the library logs of the run's process as they are.

    Returns
    -------
    prefect.Flow
        A copy of ``flow`` (same name, parameters and options) with the hooks added.
    """
    return flow.with_options(
        on_running=[*flow.on_running_hooks, partial(run_started, verbose=verbose)],
        on_completion=[*flow.on_completion_hooks, run_finished],
        on_failure=[*flow.on_failure_hooks, run_finished],
        on_crashed=[*flow.on_crashed_hooks, run_ended],
        on_cancellation=[*flow.on_cancellation_hooks, run_ended],
    )


def run_started(flow: Flow, flow_run: FlowRun, state: State, *, verbose: bool = False) -> None:
    """``on_running``: quiet this run's process (unless ``verbose``), say the run started."""
    if not verbose:
        quiet_run_logs()
    from flows.progress import set_process_hook

    set_process_hook(StageLines(_label(flow_run)))
    config = flow_run.parameters.get("config") or {}
    archive = (config.get("archive") or {}).get("path", "?")
    line = f"{_label(flow_run)} started: reprocessing {q(archive)}"
    from prefect.utilities.urls import url_for  # noqa: TID251

    url = url_for(flow_run)
    say(line + (f"  ({q(url)})" if url else ""))


def run_finished(flow: Flow, flow_run: FlowRun, state: State) -> None:
    """``on_completion`` / ``on_failure``: the summary, failed sessions named, the results."""
    from flows.progress import set_process_hook

    set_process_hook(None)
    label = _label(flow_run)
    try:
        result: Any = state.result(raise_on_failure=False)
    except Exception as exc:  # noqa: BLE001 - a result that cannot be read: said as is
        result = exc
    summary = getattr(result, "summary", result)  # SessionsFailed carries the summary
    if not hasattr(summary, "sessions"):  # failed before a summary: a bug or bad setup
        what = f"{type(result).__name__}: {result}" if isinstance(result, BaseException) else ""
        say(
            f"{label} [red]failed[/]: {q(what or state.message or state.name)}; "
            "the traceback is in the run's Prefect logs (or serve with --verbose)"
        )
        return
    for line in summary_lines(label, summary, _outputs(flow_run)):
        say(line)


def run_ended(flow: Flow, flow_run: FlowRun, state: State) -> None:
    """``on_crashed`` / ``on_cancellation`` (in the serve process): one line.

    Nothing for a run that had completed or failed (and said so): when serving stops,
    Prefect's runner cancels every run whose process has not exited yet, finished ones
    included.
    """
    known = flow_run.state
    if known is not None and (known.is_completed() or known.is_failed()):
        return
    what = "[red]crashed[/]" if state.is_crashed() else "[yellow]cancelled[/]"
    say(f"{_label(flow_run)} {what}: {q(state.message or state.name)}")


class StageLines:
    """A progress hook that prints ``run 'name': fit 3/5 sessions`` now and then.

    A stage's end is always printed; meanwhile at most one line per
    :data:`PROGRESS_EVERY_S` seconds. A stage with no sessions prints nothing.
    """

    def __init__(self, label: str, every: float = PROGRESS_EVERY_S) -> None:
        self.label = label
        self.every = every
        self._last: dict[str, float] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        """Report ``done`` of ``total`` sessions of ``stage``."""
        now = time.monotonic()
        last = self._last.setdefault(stage, now)
        if done == 0 or (done < total and now - last < self.every):
            return
        self._last[stage] = now
        say(f"{self.label}: {stage} {done}/{total} sessions")


def quiet_run_logs() -> None:
    """In a run's process: distributed's and OpenSim's logs as ``kinefit reprocess`` has them.

    Warnings are printed as one ``warning: ...`` line each, once per text (zarr's
    consolidated-metadata warning and deprecations not at all), as the CLI's error guard
    does for in-process commands.
    """
    quiet_dask_logs(False)
    quiet_opensim(False)
    warnings.showwarning = WarningLines().showwarning


def _label(flow_run: FlowRun) -> str:
    return f"run {q(repr(flow_run.name))}"


def _outputs(flow_run: FlowRun) -> Any:
    """The run's outputs config (from its ``config`` parameter), or None."""
    from pipeline.config import RunConfig

    try:
        return RunConfig.model_validate(flow_run.parameters["config"]).outputs
    except Exception:  # noqa: BLE001 - the results line is then left out
        return None
