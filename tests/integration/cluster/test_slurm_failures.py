"""``kinefit fit`` on a real one-node SLURM: every way the jobs can fail to start.

Each case exits by itself with status 1 and one ``error:`` line naming the cause (no
traceback, no INFO lines), within its timeout, and leaves no job in ``squeue``
(``slurm_clean``). The cluster: tests/fixtures/slurm.py.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pipeline.store.atomic import partial_path
from tests.fixtures.slurm_cli import (
    config,
    done_count,
    kinefit,
    one_error_line,
    start,
    tracks_store,
    wait_for,
)

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        (
            {"queue": "nosuch"},
            "error: SLURM refused the worker jobs: sbatch: error: invalid partition "
            "specified: nosuch",
        ),
        (
            {"memory": "900GiB"},
            "error: SLURM refused the worker jobs: sbatch: error: Memory specification can "
            "not be satisfied",
        ),
    ],
    ids=["bad-partition", "unsatisfiable-memory"],
)
def test_refused_jobs_fail_at_once(slurm_clean, small, tmp_path, setting, message):
    done = kinefit(
        "fit", small, "-o", tmp_path / "f.zarr", "-c", config(tmp_path, **setting), cwd=tmp_path
    )
    assert one_error_line(done) == message
    assert done.seconds < 60


def test_controller_down_fails_at_once(slurm_clean, small, tmp_path):
    slurm_clean.stop_controller()
    try:
        done = kinefit(
            "fit", small, "-o", tmp_path / "f.zarr", "-c", config(tmp_path), cwd=tmp_path
        )
    finally:
        slurm_clean.start_controller()
    line = one_error_line(done)
    assert line.startswith("error: SLURM refused the worker jobs: sbatch: error: Batch job ")
    assert "Unable to contact slurm controller" in line


def test_missing_sbatch_fails_at_once(slurm_clean, small, tmp_path):
    path = os.path.dirname(sys.executable)  # this Python, but no SLURM commands
    done = kinefit(
        "fit",
        small,
        "-o",
        tmp_path / "f.zarr",
        "-c",
        config(tmp_path),
        cwd=tmp_path,
        env={"PATH": path},
    )
    assert one_error_line(done).startswith(
        "error: cannot submit SLURM jobs: 'sbatch' is not on the PATH"
    )


def test_missing_worker_python_names_exit_127_and_the_log(slurm_clean, small, tmp_path):
    cfg = config(tmp_path, python="/nonexistent/bin/python")
    done = kinefit("fit", small, "-o", tmp_path / "f.zarr", "-c", cfg, cwd=tmp_path)
    line = one_error_line(done)
    assert "the SLURM worker jobs ended before a worker started" in line
    assert "FAILED 127" in line and "/nonexistent/bin/python: No such file or directory" in line
    assert str(tmp_path / "logs") in line


def test_jobs_that_never_start_fail_after_startup_timeout(slurm_clean, small, tmp_path):
    # the partition allows 1 minute; 10 minutes keep the jobs pending for ever
    cfg = config(tmp_path, queue="short", startup_timeout=5)
    done = kinefit("fit", small, "-o", tmp_path / "f.zarr", "-c", cfg, cwd=tmp_path)
    line = one_error_line(done)
    assert line.startswith(
        "error: no SLURM worker started within 5 s (cluster.startup_timeout): job "
    )
    assert " PD (PartitionConfig)" in line or " PD (PartitionTimeLimit)" in line
    assert done.seconds < 60


def test_workers_option_does_not_switch_a_slurm_config_to_local(slurm_clean, small, tmp_path):
    done = kinefit(
        "fit",
        small,
        "-o",
        tmp_path / "f.zarr",
        "-c",
        config(tmp_path),
        "--workers",
        "4",
        cwd=tmp_path,
    )
    assert "--set cluster.n_workers=4" in one_error_line(done)
    assert not slurm_clean.jobs()


def test_bad_inputs_fail_before_any_job_is_submitted(slurm_clean, tmp_path):
    cfg = config(tmp_path, job_name="kf-inputs")
    done = kinefit(
        "fit", tmp_path / "missing.zarr", "-o", tmp_path / "f.zarr", "-c", cfg, cwd=tmp_path
    )
    assert "missing.zarr" in one_error_line(done)
    listed = slurm_clean.run("scontrol", "-o", "show", "job").stdout
    assert "JobName=kf-inputs " not in listed  # never submitted, not even for a moment


def test_a_fit_whose_workers_do_not_come_back_fails_after_startup_timeout(slurm_clean, tmp_path):
    # the first job runs a worker; the jobs that replace it hang in their prologue
    tracks = tracks_store(tmp_path / "lost.zarr", 30000)
    hang = f"mkdir {tmp_path / 'first-job'} 2>/dev/null || sleep 1000"
    cfg = config(
        tmp_path,
        n_workers=1,
        startup_timeout=30,
        job_name="kf-lost",
        job_script_prologue=[hang],
    )
    out = tmp_path / "lost-fit.zarr"
    process = start(["fit", tracks, "-o", out, "-c", cfg], tmp_path)
    try:
        running = lambda: done_count(partial_path(out)) >= 2 or process.poll() is not None  # noqa: E731
        wait_for(running, 180, "two finished chunks")
        assert process.poll() is None, process.communicate()
        slurm_clean.run("scancel", "-n", "kf-lost")  # the node is lost
        stdout, stderr = process.communicate(timeout=120)
    finally:
        process.kill()
    done = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    line = one_error_line(done)
    assert line.startswith(
        "error: no SLURM worker came back within 30 s (cluster.startup_timeout): job "
    )
    assert " R" in line  # the replacement runs, its worker never connects
    wait_for(lambda: not slurm_clean.jobs("kf-lost"), 15, "the jobs to leave squeue")
    assert 2 <= done_count(partial_path(out)) < 300  # finished chunks kept for a rerun
