"""``kinefit fit`` and ``kinefit reprocess`` on a real one-node SLURM: results, signals.

Fits on SLURM worker jobs equal fits in this process; Ctrl-C and SIGTERM cancel every job
(queued ones too) within seconds and keep the finished chunks for a resume; a job that
reaches its walltime is replaced and the fit finishes. The cluster: tests/fixtures/slurm.py.
"""

from __future__ import annotations

import signal
import time

import numpy as np
import pytest
import yaml

from pipeline.bodyplan import mannequin
from pipeline.store.atomic import partial_path
from pipeline.store.fit import open_fit
from tests.fixtures.slurm_cli import config, done_count, kinefit, start, wait_for

pytestmark = pytest.mark.slow


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


def test_the_shipped_preset_fits_on_a_two_core_node(slurm_clean, small, tmp_path):
    # 2 jobs of 2 cores and 4 GiB: one runs, the other waits for the node (Resources)
    run = {"body_plan": "mannequin", "cluster": {"preset": "slurm", "log_directory": str(tmp_path)}}
    (tmp_path / "preset.yaml").write_text(yaml.safe_dump(run))
    done = kinefit(
        "fit", small, "-o", tmp_path / "p.zarr", "-c", tmp_path / "preset.yaml", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


def test_ctrl_c_cancels_every_job_and_the_rerun_resumes(slurm_clean, long, tmp_path):
    # three 1-core jobs on two cores: one stays pending (Resources) and must be cancelled
    out = tmp_path / "long.zarr"
    cfg = config(tmp_path, n_workers=3)
    process = start(["fit", long, "-o", out, "-c", cfg], tmp_path)
    try:
        wait_for(lambda: done_count(partial_path(out)) >= 2, 180, "two finished chunks")
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
    wait_for(lambda: not slurm_clean.jobs(), 15, "the jobs to leave squeue")
    kept = done_count(partial_path(out))
    assert 2 <= kept < 30
    rerun = kinefit("fit", long, "-o", out, "-c", cfg, "--set", "cluster.n_workers=2", cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    fitted = 30 - kept
    assert f"30 ({fitted} fitted now, {kept} resumed)" in rerun.stdout


def test_sigterm_cancels_pending_jobs(slurm_clean, long, tmp_path):
    cfg = config(tmp_path, n_workers=3)
    process = start(["fit", long, "-o", tmp_path / "t.zarr", "-c", cfg], tmp_path)
    try:
        wait_for(lambda: len(slurm_clean.jobs()) == 3, 60, "three submitted jobs")
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    wait_for(lambda: not slurm_clean.jobs(), 15, "the jobs to leave squeue")


def test_ctrl_c_during_reprocess_exits_within_seconds(slurm_clean, tmp_path):
    from pipeline.synth.demo import write_demo_archive

    write_demo_archive(tmp_path / "archive", mannequin(), np.random.default_rng(1), n_frames=1000)
    cluster = yaml.safe_load(config(tmp_path, job_name="kf-reprocess").read_text())["cluster"]
    run = {
        "body_plan": "mannequin",
        "archive": {"path": str(tmp_path / "archive")},
        "outputs": {"root": str(tmp_path / "out")},
        "cluster": cluster,
    }
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(run))
    process = start(["reprocess", "-c", tmp_path / "run.yaml"], tmp_path)
    try:
        wait_for(lambda: len(slurm_clean.jobs("kf-reprocess")) == 2, 120, "two worker jobs")
        time.sleep(5)  # into ingest or fit, with tasks on the workers
        t0 = time.monotonic()
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=120)
        seconds = time.monotonic() - t0
    finally:
        process.kill()
    assert process.returncode == 130, stdout + stderr
    assert seconds < 30, seconds
    assert "Traceback" not in stderr
    wait_for(lambda: not slurm_clean.jobs("kf-reprocess"), 15, "the jobs to leave squeue")


def _states(slurm, name: str) -> list[str]:
    jobs = slurm.run("scontrol", "-o", "show", "job").stdout.splitlines()
    return [
        next(f.split("=", 1)[1] for f in line.split() if f.startswith("JobState="))
        for line in jobs
        if f"JobName={name} " in line
    ]


def test_jobs_lost_to_walltime_are_replaced_and_the_fit_finishes(slurm_clean, long, tmp_path):
    # SLURM's shortest walltime is one minute. kinefit (its scheduler) is paused while
    # the job runs into it, so the walltime ends the job mid-fit on any machine.
    out = tmp_path / "w.zarr"
    cfg = config(tmp_path, n_workers=1, walltime="00:01:00", job_name="kf-walltime")
    process = start(["fit", long, "-o", out, "-c", cfg], tmp_path)
    try:
        wait_for(lambda: done_count(partial_path(out)) >= 1, 180, "a finished chunk")
        process.send_signal(signal.SIGSTOP)
        try:
            wait_for(lambda: "TIMEOUT" in _states(slurm_clean, "kf-walltime"), 150, "TIMEOUT")
        finally:
            process.send_signal(signal.SIGCONT)
        stdout, stderr = process.communicate(timeout=300)
    finally:
        process.kill()
    assert process.returncode == 0, stderr
    assert "30 (30 fitted now, 0 resumed)" in stdout
    states = _states(slurm_clean, "kf-walltime")
    assert states[0] == "TIMEOUT" and len(states) >= 2, states  # and a replacement
    assert not slurm_clean.jobs("kf-walltime")
