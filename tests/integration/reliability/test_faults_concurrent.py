"""Fault 4: two runs on the same session at once; no corruption, no duplicated work.

Two ``kinefit fit`` processes start together on the same tracks and output. The session
lock (:mod:`pipeline.store.lock`) lets exactly one of them fit; the other either exits
with status 1 naming the lock's owner before doing any work, or (if it starts after the
first finished) finds the fit current. Either way, every chunk is fitted exactly once and
the store equals an uninterrupted fit. A lock left behind by a killed run never blocks.
"""

from __future__ import annotations

import json
import os
import re
import signal

import pytest

from pipeline.fit import SessionLockedError, fit_session
from pipeline.store.atomic import partial_path
from pipeline.store.lock import lock_path, session_lock
from tests.fixtures.reliability_fixtures import FAULT_CHUNK, LONG_FAULT_CHUNKS, same_fit
from tests.fixtures.reliability_helpers import KINEFIT, done_count, start, stop, wait_for


def _fit_args(tracks, plan, out):
    return [
        *KINEFIT,
        "fit",
        str(tracks),
        "-b",
        str(plan),
        "-o",
        str(out),
        "--workers",
        "0",
        "--chunk-frames",
        str(FAULT_CHUNK),
    ]


def test_two_fits_of_one_session_at_once(fly_plan_path, fault_session, tmp_path):
    tracks, reference = fault_session
    out = tmp_path / "fit.zarr"
    procs = [
        start(_fit_args(tracks, fly_plan_path, out), tmp_path / f"run{i}.log") for i in range(2)
    ]
    try:
        for proc in procs:
            proc.wait(240)
    finally:
        for proc in procs:
            stop(proc)
    logs = [" ".join((tmp_path / f"run{i}.log").read_text().split()) for i in range(2)]
    codes = sorted(p.returncode for p in procs)
    fitted = [int(m) for log in logs for m in re.findall(r"\((\d+) fitted now", log)]
    assert sum(fitted) == 12, logs  # every chunk fitted once, by one of the runs
    if codes == [0, 1]:
        loser = logs[[p.returncode for p in procs].index(1)]
        # the owner is named, unless the loser looked while the winner was writing it
        assert re.search(
            r"error: .*fit\.zarr: another run is fitting this session \("
            r"(pid \d+ on host .* since|owner unknown \(lock file being written\))",
            loser,
        ), loser
    else:
        assert codes == [0, 0] and sum("up to date" in log for log in logs) == 1, logs
    assert not partial_path(out).exists() and not lock_path(out).exists()
    same_fit(out, reference)


def test_lock_names_its_owner_and_is_released(fly, small_session, solver, tmp_path):
    tracks, _ = small_session
    out = tmp_path / "fit.zarr"
    with session_lock(out):
        owner = json.loads(lock_path(out).read_text())
        assert owner["pid"] == os.getpid()
        before = sorted(p.name for p in tmp_path.iterdir())
        with pytest.raises(SessionLockedError, match=f"pid {os.getpid()} on host"):
            fit_session(tracks, fly, solver, out)
        assert sorted(p.name for p in tmp_path.iterdir()) == before  # no work was done
    assert not lock_path(out).exists()
    assert not fit_session(tracks, fly, solver, out).skipped


def test_lock_of_a_killed_run_does_not_block(
    fly, fly_plan_path, long_fault_session, solver, tmp_path
):
    # LONG_FAULT_CHUNKS and a fast poll: 12 chunks of 30 ms were all done (the run still
    # finishing) when a 12-chunk session's poll first looked (local run, 2026-12-07)
    tracks, reference = long_fault_session
    out = tmp_path / "fit.zarr"
    proc = start(_fit_args(tracks, fly_plan_path, out), tmp_path / "run.log")
    try:
        wait_for(
            lambda: done_count(partial_path(out)) >= 1 or proc.poll() is not None,
            120,
            "a chunk done",
            poll=0.005,
        )
        assert proc.poll() is None, (tmp_path / "run.log").read_text()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        stop(proc)
    assert json.loads(lock_path(out).read_text())["pid"] == proc.pid  # left behind
    report = fit_session(tracks, fly, solver, out)
    assert 0 < len(report.chunks_fitted) < LONG_FAULT_CHUNKS
    same_fit(out, reference)
