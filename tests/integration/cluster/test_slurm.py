"""``kinefit fit`` on a real one-node SLURM (tests/fixtures/slurm.py): results, failures.

Each test runs the command line as a user would (a subprocess) against worker jobs that
slurmctld really schedules, and checks the exit status, the one-line error and that no
job of kinefit's is left in ``squeue``. Worker jobs ask for 1 core and 1 GiB each.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from pipeline.bodyplan import mannequin
from pipeline.store import write_tracks
from pipeline.store.atomic import partial_path
from pipeline.store.chunks import done_chunks
from pipeline.store.fit import open_fit
from pipeline.synth import SynthConfig, synthesize

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[3]


def _tracks(path: Path, n_frames: int) -> Path:
    synth = synthesize(
        mannequin(), SynthConfig(n_frames=n_frames, noise=0.002), np.random.default_rng(5)
    )
    return write_tracks(synth.tracks.assign_attrs(up_axis="y"), path, chunk_frames=100)


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    """400 frames, 4 chunks of 100."""
    return _tracks(tmp_path_factory.mktemp("tracks") / "small.zarr", 400)


@pytest.fixture(scope="module")
def long(tmp_path_factory) -> Path:
    """3000 frames, 30 chunks: long enough to interrupt."""
    return _tracks(tmp_path_factory.mktemp("tracks") / "long.zarr", 3000)


def config(folder: Path, chunk_frames: int = 100, **cluster) -> Path:
    """A run config: the mannequin, 100-frame chunks, SLURM jobs of 1 core and 1 GiB."""
    settings = {
        "mode": "slurm",
        "n_workers": 2,
        "cores": 1,
        "memory": "1GiB",
        "walltime": "00:10:00",
        "log_directory": str(folder / "logs"),
        "startup_timeout": 60,
        **cluster,
    }
    path = folder / "kinefit.yaml"
    run = {"body_plan": "mannequin", "chunking": {"chunk_frames": chunk_frames}}
    run["cluster"] = settings
    path.write_text(yaml.safe_dump(run))
    return path


def kinefit(*args, cwd: Path, env: dict | None = None, timeout: float = 240):
    """Run the command line; the finished process (stdout, stderr, returncode, seconds)."""
    t0 = time.monotonic()
    environ = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    done = subprocess.run(
        [sys.executable, "-m", "flows.cli", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=environ,
        timeout=timeout,
    )
    done.seconds = time.monotonic() - t0
    return done


def one_error_line(done) -> str:
    """The ``error:`` line of a failed run, checking it is the only output of note."""
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and "INFO" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    return errors[0]


def test_fit_on_slurm_jobs_equals_in_process(slurm_clean, small, tmp_path):
    cfg = config(tmp_path, worker_env={"KINEFIT_NOTE": "two words $HOME"})
    done = kinefit("fit", small, "-o", "out/rel.zarr", "-c", cfg, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "INFO" not in done.stdout + done.stderr
    assert "4 (4 fitted now, 0 resumed)" in done.stdout
    local = ("--set", "cluster.mode=local", "--set", "cluster.n_workers=0")
    ref = kinefit("fit", small, "-o", tmp_path / "ref.zarr", "-c", cfg, *local, cwd=tmp_path)
    assert ref.returncode == 0, ref.stderr
    fit, expected = open_fit(tmp_path / "out" / "rel.zarr"), open_fit(tmp_path / "ref.zarr")
    for name in ("dof_value", "rms_error", "joint_rotation", "converged"):
        np.testing.assert_array_equal(fit[name].values, expected[name].values)
    logs = sorted(p.name for p in (tmp_path / "logs").iterdir())
    assert logs and all(p.startswith("kinefit-worker-") for p in logs)
    assert not list(tmp_path.glob("slurm-*.out"))  # no job logs in the current folder


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


def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def _start(args, cwd: Path) -> subprocess.Popen:
    environ = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "flows.cli", *map(str, args)],
        cwd=cwd,
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _done(partial: Path) -> int:
    try:
        return int(done_chunks(partial).sum())
    except Exception:  # noqa: BLE001 - not created yet
        return 0


def test_ctrl_c_cancels_every_job_and_the_rerun_resumes(slurm_clean, long, tmp_path):
    # three 1-core jobs on two cores: one stays pending (Resources) and must be cancelled
    out = tmp_path / "long.zarr"
    cfg = config(tmp_path, n_workers=3)
    process = _start(["fit", long, "-o", out, "-c", cfg], tmp_path)
    try:
        _wait(lambda: _done(partial_path(out)) >= 2, 180, "two finished chunks")
        assert len(slurm_clean.jobs()) == 3
        t0 = time.monotonic()
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
        seconds = time.monotonic() - t0
    finally:
        process.kill()
    assert process.returncode == 130, stderr
    assert seconds < 20
    assert "Traceback" not in stderr and "interrupted" in stderr
    _wait(lambda: not slurm_clean.jobs(), 15, "the jobs to leave squeue")
    kept = _done(partial_path(out))
    assert 2 <= kept < 30
    rerun = kinefit("fit", long, "-o", out, "-c", cfg, "--set", "cluster.n_workers=2", cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    fitted = 30 - kept
    assert f"30 ({fitted} fitted now, {kept} resumed)" in rerun.stdout


def test_sigterm_cancels_pending_jobs(slurm_clean, long, tmp_path):
    cfg = config(tmp_path, n_workers=3)
    process = _start(["fit", long, "-o", tmp_path / "t.zarr", "-c", cfg], tmp_path)
    try:
        _wait(lambda: len(slurm_clean.jobs()) == 3, 60, "three submitted jobs")
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    _wait(lambda: not slurm_clean.jobs(), 15, "the jobs to leave squeue")


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


def _task_seconds(folder: Path, chunk_frames: int) -> float:
    """Seconds one chunk task takes on a SLURM worker here (sizes the walltime test).

    The tasks' own time (``timings.total_s``), never more than their share of the wall
    time, so a fit sized by it takes at least as long as intended.
    """
    tracks = _tracks(folder / "calibrate.zarr", 6 * chunk_frames)
    cfg = config(folder, chunk_frames, n_workers=1, job_name="kf-calibrate")
    done = kinefit("fit", tracks, "-o", folder / "calibrate-fit.zarr", "-c", cfg, cwd=folder)
    assert done.returncode == 0, done.stderr
    timings = open_fit(folder / "calibrate-fit.zarr").attrs["timings"]
    return timings["total_s"] / timings["chunks_this_run"]


def test_jobs_lost_to_walltime_are_replaced_and_the_fit_finishes(slurm_clean, tmp_path):
    # SLURM's shortest walltime is one minute: give one 1-core job ~80 s of tasks
    chunk = 500
    n_chunks = int(np.clip(np.ceil(80 / _task_seconds(tmp_path, chunk)), 20, 600))
    tracks = _tracks(tmp_path / "walltime.zarr", chunk * n_chunks)
    cfg = config(tmp_path, chunk, n_workers=1, walltime="00:01:00", job_name="kf-walltime")
    done = kinefit("fit", tracks, "-o", tmp_path / "w.zarr", "-c", cfg, cwd=tmp_path, timeout=900)
    assert done.returncode == 0, done.stderr
    assert f"{n_chunks} ({n_chunks} fitted now, 0 resumed)" in done.stdout
    jobs = slurm_clean.run("scontrol", "-o", "show", "job").stdout.splitlines()
    states = [
        next(f.split("=", 1)[1] for f in line.split() if f.startswith("JobState="))
        for line in jobs
        if "JobName=kf-walltime " in line
    ]
    assert "TIMEOUT" in states and len(states) >= 2, states
    assert not slurm_clean.jobs("kf-walltime")
