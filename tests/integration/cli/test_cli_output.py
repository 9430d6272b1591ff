"""The CLI's one output module: summaries, warning lines, library log levels."""

from __future__ import annotations

import logging
import os
import warnings

from rich.console import Console

from flows.cli import output
from flows.cli.output import (
    MAX_NAMED_FAILURES,
    WarningLines,
    print_summary,
    summary_lines,
)
from flows.logs import quiet_dask_logs
from pipeline.archive.summary import ArchiveSummary, SessionOutcome
from pipeline.config import OutputsConfig


def _summary(n_failed: int) -> ArchiveSummary:
    ok = SessionOutcome("walk", "fitted", frames=100, individuals=1, seconds=2.0, rms=0.01)
    failed = tuple(
        SessionOutcome.failure(f"s{i}", "ingest", ValueError(f"bad [file] {i}"))
        for i in range(n_failed)
    )
    return ArchiveSummary((ok, *failed), seconds=3.0, report="/out/report.html")


def _record(monkeypatch) -> Console:
    console = Console(record=True, width=200, force_terminal=False)
    monkeypatch.setattr(output, "console", console)
    monkeypatch.setattr(output, "err_console", console)
    return console


def test_both_summaries_name_the_same_failures_and_the_report(monkeypatch):
    summary = _summary(MAX_NAMED_FAILURES + 2)
    console = _record(monkeypatch)
    print_summary(summary)
    printed = console.export_text()
    for line in summary_lines("run 'x'", summary, OutputsConfig(root="/out"))[1:]:
        plain = Console(width=200).render_str(line).plain.strip()
        if plain.startswith("results: fits"):
            assert "results: report /out/report.html" in printed  # no outputs: report only
        else:
            assert plain in printed, plain
    assert "failed s0 (ingest): ValueError: bad [file] 0" in printed  # brackets kept
    assert "and 2 more failed" in printed and "failed s11 " not in printed


def test_a_served_runs_lines(monkeypatch):
    lines = summary_lines("run 'x'", _summary(1), OutputsConfig(root="/out"))
    plain = [Console().render_str(line).plain for line in lines]
    assert plain[0] == (
        "run 'x' failed: 2 session(s), 1 fitted, 0 skipped, 1 failed; 100 frames fitted, 3 s"
    )
    assert plain[1] == "  failed s0 (ingest): ValueError: bad [file] 0"
    assert plain[2].startswith("  results: fits in /out") and plain[2].endswith(
        "report /out/report.html"
    )
    clean = summary_lines("run 'y'", ArchiveSummary((_summary(0).sessions[0],), seconds=1.0))
    assert len(clean) == 1 and "completed" in clean[0]


def test_warning_lines_once_per_text_without_deprecations(monkeypatch):
    console = _record(monkeypatch)
    lines = WarningLines()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.warn("the fps [25] is a guess", UserWarning, stacklevel=1)
        warnings.warn("the fps [25] is a guess", UserWarning, stacklevel=1)
        warnings.warn("old API", DeprecationWarning, stacklevel=1)
        warnings.warn(output.CONSOLIDATED_WARNING + " ...", UserWarning, stacklevel=1)
    lines.show_all(caught)
    lines.showwarning("another", RuntimeWarning, "f.py", 1)
    assert console.export_text().splitlines() == [
        "warning: the fps [25] is a guess",
        "warning: another",
    ]


def test_dask_logs_quiet_unless_verbose():
    names = ("distributed", "distributed.core", "tornado.application")
    before = {n: logging.getLogger(n).level for n in names}
    try:
        for n in names:
            logging.getLogger(n).setLevel(logging.INFO)
        quiet_dask_logs(verbose=True)
        assert all(logging.getLogger(n).level == logging.INFO for n in names)
        quiet_dask_logs()
        assert logging.getLogger("distributed").level == logging.ERROR
        assert logging.getLogger("distributed.core").level == logging.CRITICAL
        assert logging.getLogger("tornado.application").level == logging.CRITICAL
    finally:
        for n, level in before.items():
            logging.getLogger(n).setLevel(level)


def test_library_logs_quiet_for_the_process_and_its_children_unless_verbose(monkeypatch):
    from prefect.logging.handlers import PrefectConsoleHandler

    from flows.logs import CHILD_ENV, quiet_library_logs

    console = PrefectConsoleHandler()  # as Prefect's logging setup hangs it on "prefect"
    logging.getLogger("prefect").addHandler(console)
    level = logging.getLogger("distributed").level
    for key in CHILD_ENV:
        monkeypatch.delenv(key, raising=False)
    try:
        logging.getLogger("distributed").setLevel(logging.INFO)
        quiet_library_logs(verbose=True)  # reprocess_archive(config, verbose=True)
        assert console.level == logging.NOTSET
        assert logging.getLogger("distributed").level == logging.INFO
        assert not set(CHILD_ENV) & set(os.environ)
        quiet_library_logs()
        assert console.level == logging.CRITICAL
        assert logging.getLogger("distributed").level == logging.ERROR
        assert all(os.environ[k] == v for k, v in CHILD_ENV.items())
    finally:
        logging.getLogger("prefect").removeHandler(console)
        logging.getLogger("distributed").setLevel(level)
