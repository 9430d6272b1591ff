"""What ``kinefit`` prints, and what it keeps other libraries from printing.

- kinefit's own lines: :func:`say` (standard output), :func:`error` and :func:`warn`
  (standard error), :func:`q` to show user text as is;
- warnings: :class:`WarningLines`, one ``warning:`` line per text, for the error guard
  of in-process commands and for the runs of ``kinefit serve``;
- the run summary of ``reprocess``/``demo`` (:func:`print_summary`) and of a served run
  (:func:`summary_lines`), sharing the failed-session and results lines;
- third-party chatter kept off the terminal and out of the current folder unless
  ``--verbose``: Prefect's console handler (:func:`quiet_prefect_console`),
  distributed's loggers (:func:`quiet_dask_logs`), OpenSim's logger
  (:func:`quiet_opensim`: its console lines go to standard output, and it writes
  ``opensim.log`` into the current folder).

Imports nothing heavy at module level (no numpy, no prefect, no distributed).
"""

from __future__ import annotations

import importlib.abc
import logging
import sys
import warnings
from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

__all__ = [
    "CONSOLIDATED_WARNING",
    "MAX_NAMED_FAILURES",
    "WarningLines",
    "console",
    "err_console",
    "error",
    "print_summary",
    "q",
    "quiet_dask_logs",
    "quiet_opensim",
    "quiet_prefect_console",
    "say",
    "summary_lines",
    "warn",
]

console = Console(stderr=False)
err_console = Console(stderr=True)

#: zarr's warning when kinefit writes consolidated metadata (the store module silences it,
#: but zarr raises it on its own I/O thread, where another thread's warning filters may rule).
CONSOLIDATED_WARNING = "Consolidated metadata is currently not part in the Zarr format 3"
#: Failed sessions named one per line in a summary; the others are counted.
MAX_NAMED_FAILURES = 10
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


def q(value: object) -> str:
    """``value`` as text that rich prints as is: user paths and messages keep their [brackets]."""
    return escape(str(value))


def say(text: str) -> None:
    """Print one line of rich markup on standard output, without highlighting or wrapping."""
    console.print(text, highlight=False, soft_wrap=True)


def error(text: str) -> None:
    """Print ``error: text`` on standard error; the text is shown as is (no rich markup)."""
    err_console.print(f"[bold red]error:[/] {escape(text)}", highlight=False, soft_wrap=True)


def warn(text: str) -> None:
    """Print ``warning: text`` on standard error; the text is shown as is."""
    err_console.print(f"[yellow]warning:[/] {escape(text)}", highlight=False, soft_wrap=True)


class WarningLines:
    """Warnings as one ``warning:`` line each, once per text.

    Deprecation and future warnings (meant for developers) and zarr's
    consolidated-metadata warning are left out. Call it with a warning's message and
    category; :meth:`showwarning` has the signature of :func:`warnings.showwarning`.
    """

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def __call__(self, message: Warning | str, category: type[Warning]) -> None:
        """Print the warning unless it was printed already or is left out."""
        text = str(message)
        if text in self.seen or text.startswith(CONSOLIDATED_WARNING):
            return
        if issubclass(category, DeprecationWarning | FutureWarning):
            return
        self.seen.add(text)
        warn(text)

    def show_all(self, caught: Iterable[warnings.WarningMessage]) -> None:
        """Print warnings recorded by :func:`warnings.catch_warnings`."""
        for w in caught:
            self(w.message, w.category)

    def showwarning(
        self,
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: Any = None,
        line: str | None = None,
    ) -> None:
        """A replacement for :func:`warnings.showwarning`."""
        self(message, category)


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


def print_summary(summary: Any) -> None:
    """An archive run's summary: counts, speed, worst sessions, stop reasons, failures."""
    speed = f"{summary.frames_per_s:,.0f}" if summary.frames_per_s else "-"
    table = Table(title="kinefit archive run", show_header=False, box=None)
    rows = [
        ("sessions", f"{len(summary.sessions)}"),
        (
            "fitted / skipped / failed",
            f"[green]{summary.fitted}[/] / {summary.skipped} / "
            f"[{'red' if summary.failed else 'green'}]{summary.failed}[/]",
        ),
        ("frames fitted", f"{summary.frames:,} ({speed} frames/s of wall time)"),
        ("solver speed", _solver_speed(summary)),
        ("wall time", f"{summary.seconds:.1f} s"),
    ]
    for key, value in rows:
        table.add_row(f"[bold]{key}[/]", value)
    console.print(table)
    worst = summary.worst()
    if worst:
        unit = f" ({summary.unit})" if summary.unit else ""
        ranked = Table(title=f"worst sessions by median RMS{unit}", box=None)
        for column in ("session", "status", "median RMS", "frames", "individuals"):
            ranked.add_column(
                column, justify="left" if column in ("session", "status") else "right"
            )
        for s in worst:
            ranked.add_row(s.session, s.status, f"{s.rms:.4g}", str(s.frames), str(s.individuals))
        console.print(ranked)
    _print_stop_reasons(summary.stop_reasons)
    for line in _failure_lines(summary) + _results_lines(summary):
        say(line)


def summary_lines(label: str, summary: Any, outputs: Any = None) -> list[str]:
    """A served run's closing lines: counts and time, each failed session, the results.

    Parameters
    ----------
    label : str
        ``run 'name'``.
    summary : ArchiveSummary
    outputs : OutputsConfig, optional
        The run's outputs (where its fits are); none: that line names only the report.
    """
    status = "[red]failed[/]" if summary.failed else "[green]completed[/]"
    lines = [
        f"{label} {status}: {len(summary.sessions)} session(s), {summary.fitted} fitted, "
        f"{summary.skipped} skipped, {summary.failed} failed; {summary.frames:,} frames "
        f"fitted, {summary.seconds:.0f} s"
    ]
    return lines + _failure_lines(summary, "  ") + _results_lines(summary, outputs, "  ")


def _failure_lines(summary: Any, indent: str = "") -> list[str]:
    """Each failed session (the first :data:`MAX_NAMED_FAILURES`), the rest counted."""
    failed = [s for s in summary.sessions if s.status == "failed"]
    lines = [
        f"{indent}[red]failed[/] {q(s.session)} ({q(s.stage)}): {q(s.error)}"
        for s in failed[:MAX_NAMED_FAILURES]
    ]
    if len(failed) > MAX_NAMED_FAILURES:
        more = len(failed) - MAX_NAMED_FAILURES
        lines.append(f"{indent}and {more} more failed (all in the run's summary artifact)")
    return lines


def _results_lines(summary: Any, outputs: Any = None, indent: str = "") -> list[str]:
    """Where the results are: the fits folder (when known) and the report."""
    where = [f"fits in {q(outputs.fits_dir)}"] if outputs is not None else []
    where += [f"report {q(summary.report)}"] if summary.report else []
    return [f"{indent}results: " + ", ".join(where)] if where else []


def _solver_speed(summary: Any) -> str:
    speed = summary.solver_frames_per_s
    if not speed:
        return "-"
    return f"{speed:,.0f} frames/s per core (solving only; wall time adds start-up and I/O)"


def _print_stop_reasons(reasons: dict[str, int]) -> None:
    """Frames by stop reason, each with what it means for the fitted pose."""
    from pipeline.solve.rules import STOP_MEANINGS

    total = sum(reasons.values())
    if not total or reasons.get("converged", 0) == total:
        if total:
            say(f"all {total:,} frame-individuals converged")
        return
    for name, n in reasons.items():
        if n:
            say(f"  {n:,} {name.replace('_', ' ')}: {STOP_MEANINGS[name]}")
