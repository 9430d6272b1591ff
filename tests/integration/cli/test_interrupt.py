"""Ctrl-C on a running archive job: one line, exit 130, nothing left running, a rerun resumes.

The signal goes to the whole process group, as a terminal's Ctrl-C does: kinefit, the
local Prefect server it started and the local Dask workers all get it, so the flow may see
the server's connection drop before its own ``KeyboardInterrupt`` surfaces.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flows.cli.common import EXIT_INTERNAL, EXIT_INTERRUPTED, guard
from pipeline.cluster import clear_interrupt, interrupt

KINEFIT = Path(sys.executable).with_name("kinefit")


def _group_alive(pgid: int) -> list[str]:
    """Command lines of the processes still in process group ``pgid``."""
    ps = subprocess.run(["ps", "-eo", "pgid=,args="], capture_output=True, text=True).stdout
    return [line for line in ps.splitlines() if line.split(maxsplit=1)[0] == str(pgid)]


@pytest.mark.slow
def test_ctrl_c_during_the_fits_stops_cleanly_and_a_rerun_resumes(tmp_path):
    env = {**os.environ, "KINEFIT_HOME": str(tmp_path / "home")}
    out = tmp_path / "demo"
    command = [str(KINEFIT), "demo", "--out", str(out), "--frames", "6000", "--workers", "1"]
    process = subprocess.Popen(
        command,
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, like a terminal's foreground job
    )
    seen = []
    for line in process.stdout:  # wait for the flow to start, then let the fits run a bit
        seen.append(line)
        if line.startswith("reprocessing"):
            break
    # the cluster is up once a session is ingested (on it); a second later the work is
    # in flight. (A Ctrl-C during the cluster's own 1-3 s start is not seen: its workers
    # are started deaf to SIGINT, see pipeline.cluster.client.)
    deadline = time.monotonic() + 300
    while not list((out / "tracks").glob("*.zarr")) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)
    os.killpg(process.pid, signal.SIGINT)
    try:
        stdout, stderr = process.communicate(timeout=90)
    finally:
        process.kill()
    text = "".join(seen) + stdout + stderr
    assert process.returncode == EXIT_INTERRUPTED, text
    assert "error: interrupted; finished work is kept, rerun to resume" in stderr, text
    assert "internal error" not in text and "Traceback" not in text, text
    deadline = time.monotonic() + 20
    while _group_alive(process.pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _group_alive(process.pid)  # server and workers went down with it
    rerun = [str(KINEFIT), "reprocess", "-c", str(out / "kinefit.yaml"), "--workers", "1"]
    done = subprocess.run(rerun, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        "fitted / skipped / failed" in done.stdout
        and " / 0 " in done.stdout.split("fitted / skipped / failed", 1)[1].splitlines()[0]
    )
    assert len(list((out / "fits").glob("*.zarr"))) == 5


def test_an_error_raised_after_the_signal_is_reported_as_the_interrupt(capsys):
    """The local server's connection going down with Ctrl-C is no 'internal error'."""
    import typer

    try:
        with pytest.raises(typer.Exit) as stopped, guard(verbose=False):
            interrupt()  # the signal arrives inside the command
            raise ConnectionRefusedError("[Errno 111] Connection refused")
    finally:
        clear_interrupt()
    assert stopped.value.exit_code == EXIT_INTERRUPTED
    assert "interrupted; finished work is kept" in capsys.readouterr().err


def test_without_a_signal_the_same_error_is_still_a_bug_report(capsys):
    """And a signal of an earlier command in the same process does not mask a later bug."""
    import typer

    interrupt()  # left over from an earlier command; guard starts from a clean slate
    with pytest.raises(typer.Exit) as stopped, guard(verbose=False):
        raise RuntimeError("something kinefit got wrong")
    assert stopped.value.exit_code == EXIT_INTERNAL
    assert "internal error (RuntimeError: something kinefit got wrong)" in capsys.readouterr().err


def test_sessions_cut_short_by_the_signal_are_the_interrupt_not_failures(monkeypatch, capsys):
    """Ctrl-C while sessions fit: the flow may end with those sessions failed (their tasks
    stopped); that is the interrupt (exit 130), not exit 1 with a summary of failures."""
    from types import SimpleNamespace

    import typer

    import flows.archive
    from flows.cli.run import _run
    from pipeline.archive.summary import ArchiveSummary
    from pipeline.errors import SessionsFailed

    def cut_short(config, force=False, verbose=False):
        interrupt()  # the signal arrived; the sessions in flight fail
        raise SessionsFailed(ArchiveSummary(sessions=()), "2 of 5 session(s) failed: a, b")

    monkeypatch.setattr(flows.archive, "reprocess_archive", cut_short)
    try:
        with pytest.raises(typer.Exit) as stopped, guard(verbose=False):
            _run(SimpleNamespace(archive=SimpleNamespace(path="archive")), force=False)
    finally:
        clear_interrupt()
    assert stopped.value.exit_code == EXIT_INTERRUPTED
    assert "interrupted; finished work is kept" in capsys.readouterr().err
