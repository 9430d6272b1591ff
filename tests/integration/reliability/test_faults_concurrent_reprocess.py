"""Fault 4 at the archive level: two reprocess runs started on the same archive at once.

Two processes run ``flows.archive.reprocess_archive`` (what ``kinefit reprocess`` runs
after loading its config) on the same run config, each with its own ephemeral Prefect
server. Whatever the interleaving, every session is fitted exactly once (the other run
skips it or reports it busy), no partial store or lock is left, and every fit store is
complete and equal to a fit of the same tracks. The run that finds a session locked
reports it failed with SessionLockedError (the flow could call it busy instead). Slow (two
Prefect servers): marked slow and run only with KINEFIT_SLOW_TESTS=1.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest
import xarray as xr

from pipeline.bodyplan import mannequin
from pipeline.fit import fit_session
from pipeline.store.fit import open_fit
from tests.fixtures.reliability_helpers import start, stop

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not os.environ.get("KINEFIT_SLOW_TESTS"),
        reason="slow (two Prefect servers, about 90 s): set KINEFIT_SLOW_TESTS=1 to run",
    ),
]

DRIVER = """
import json, sys
from flows.env import prepare_prefect_env
prepare_prefect_env()
from pipeline.config import load_run_config
from flows.archive import reprocess_archive
summary = reprocess_archive(load_run_config(sys.argv[1]))
print("SUMMARY " + json.dumps([[s.session, s.status, s.error] for s in summary.sessions]))
"""


def test_two_reprocess_runs_at_once(tmp_path):
    from pipeline.synth.demo import write_demo_archive

    plan = mannequin()
    write_demo_archive(tmp_path / "archive", plan, np.random.default_rng(3), n_frames=240)
    config = tmp_path / "run.yaml"
    config.write_text(
        "archive: {path: archive, patterns: ['*.nc', '*.csv'], fps: 60}\n"
        "body_plan: mannequin\n"
        "solver: {neutral_weight: 1.0e-6, position_tolerance: 1.0e-5}\n"
        "chunking: {tracks_chunk_frames: 24, concurrent_sessions: 2}\n"
        "cluster: {mode: local, n_workers: 0}\n"
        "outputs: {root: out, write_report: false}\n"
    )
    procs = []
    try:
        for i in range(2):
            env = {"PREFECT_HOME": str(tmp_path / f"prefect{i}"), "KINEFIT_HOME": str(tmp_path)}
            args = [sys.executable, "-c", DRIVER, str(config)]
            procs.append(start(args, tmp_path / f"run{i}.log", **env))
        for proc in procs:
            proc.wait(600)
    finally:
        for proc in procs:
            stop(proc)
    summaries = []
    for i in range(2):
        log = (tmp_path / f"run{i}.log").read_text()
        line = [x for x in log.splitlines() if x.startswith("SUMMARY ")]
        assert line, log[-3000:]
        summaries.append({s: (status, error) for s, status, error in json.loads(line[0][8:])})
    sessions = sorted(summaries[0])
    assert sessions and sorted(summaries[1]) == sessions
    for session in sessions:
        outcomes = [summaries[0][session], summaries[1][session]]
        fitted = [o for o in outcomes if o[0] == "fitted"]
        assert len(fitted) == 1, (session, outcomes)  # fitted exactly once
        other = next(o for o in outcomes if o[0] != "fitted")
        assert other[0] == "skipped" or "another run is fitting this session" in other[1], (
            session,
            other,
        )
    out = tmp_path / "out"
    leftovers = [p.name for p in out.rglob(".*")]
    assert not leftovers, leftovers  # no partial store, lock or old store left behind
    for session in sessions:
        fit = out / "fits" / f"{session}.zarr"
        reference = fit_session(
            out / "tracks" / f"{session}.zarr",
            plan,
            _solver(fit),
            tmp_path / "reference" / f"{session}.zarr",
            chunk_frames=24,
        )
        xr.testing.assert_identical(
            open_fit(fit).drop_attrs().load(), open_fit(reference.out).drop_attrs().load()
        )


def _solver(fit):
    from pipeline.solve import SolverConfig

    return SolverConfig.from_dict(open_fit(fit).attrs["solver_config"])
