"""Fault 2: the whole run killed mid-session; the rerun resumes and ends equal.

``kinefit fit`` runs as a subprocess (chunks in-process, ``--workers 0``) and is killed
with SIGKILL by its PID once some chunks are marked done in its partial store. While it
runs, and after, the final store name never exists. The rerun fits only the chunks that
were not done and the result equals an uninterrupted fit.
"""

from __future__ import annotations

import os
import shutil
import signal

import numpy as np
import pytest

from pipeline.fit import FitError, fit_session
from pipeline.store.atomic import partial_path
from pipeline.store.chunks import done_chunks
from tests.fixtures.faults import FailChunks
from tests.fixtures.reliability_fixtures import FAULT_CHUNK, LONG_FAULT_CHUNKS, same_fit
from tests.fixtures.reliability_helpers import KINEFIT, done_count, start, stop, wait_for


@pytest.mark.parametrize("when", [0, 3], ids=["while-creating-the-store", "after-3-chunks"])
def test_killed_run_resumes(fly, fly_plan_path, long_fault_session, solver, tmp_path, when):
    # LONG_FAULT_CHUNKS: the run must still be fitting when a poll sees three chunks done
    tracks, reference = long_fault_session
    out = tmp_path / "fit.zarr"
    partial = partial_path(out)
    args = [
        *KINEFIT,
        "fit",
        str(tracks),
        "-b",
        str(fly_plan_path),
        "-o",
        str(out),
        "--workers",
        "0",
        "--chunk-frames",
        str(FAULT_CHUNK),
    ]
    proc = start(args, tmp_path / "run.log")
    try:

        def ready() -> bool:
            assert not out.exists(), "the final store appeared before the run finished"
            if proc.poll() is not None:
                return True
            return partial.exists() and (when == 0 or done_count(partial) >= when)

        wait_for(ready, 120, f"{when} chunks done", poll=0.005)
        assert proc.poll() is None, (tmp_path / "run.log").read_text()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        stop(proc)
    assert proc.returncode == -signal.SIGKILL
    assert not out.exists() and partial.is_dir()
    try:
        done = done_chunks(partial)
    except Exception:  # noqa: BLE001 - killed before the markers were created
        done = np.zeros(LONG_FAULT_CHUNKS, bool)
    assert when <= done.sum() < done.size
    report = fit_session(tracks, fly, solver, out)
    assert report.chunks_fitted == tuple(int(k) for k in np.flatnonzero(~done))
    assert not partial.exists()
    same_fit(out, reference)


def _drop_markers(partial):
    shutil.rmtree(partial / "_kinefit")


def _drop_variable(partial):
    shutil.rmtree(partial / "dof_value")


def _unset_created(partial):
    import zarr

    del zarr.open_group(partial, mode="r+", zarr_format=3).attrs["created"]


@pytest.mark.parametrize(
    "damage",
    [_drop_markers, _drop_variable, _unset_created],
    ids=["markers-missing", "variable-missing", "creation-unfinished"],
)
def test_half_created_partial_store_is_rebuilt(fly, fault_session, solver, tmp_path, damage):
    """A run killed while creating its store leaves it without markers, variables or the
    ``created`` attr (written last): the rerun starts over instead of failing forever."""
    tracks, reference = fault_session
    out = tmp_path / "fit.zarr"
    with pytest.raises(FitError):
        fit_session(tracks, fly, solver, out, chunk_task=FailChunks.of(range(1, 12)))
    damage(partial_path(out))
    report = fit_session(tracks, fly, solver, out)
    assert report.chunks_fitted == tuple(range(12))
    same_fit(out, reference)
