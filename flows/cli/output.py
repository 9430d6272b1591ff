"""What ``kinefit`` prints.

- kinefit's own lines: :func:`say` (standard output), :func:`error` and :func:`warn`
  (standard error), :func:`q` to show user text as is;
- warnings: :class:`WarningLines`, one ``warning:`` line per text, for the error guard
  of in-process commands and for the runs of ``kinefit serve``;
- the run summary of ``reprocess``/``demo`` (:func:`print_summary`) and of a served run
  (:func:`summary_lines`), sharing the failed-session and results lines.

Third-party chatter is kept off the terminal by :mod:`flows.logs` (the one place for it).

Imports nothing heavy at module level (no numpy, no prefect, no distributed).
"""

from __future__ import annotations

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
