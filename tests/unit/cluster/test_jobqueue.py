"""SLURM/PBS job scripts as dask-jobqueue renders them from a ClusterConfig (no queue).

What each setting asks the scheduler for, the user's dask-jobqueue config merged rather
than overwritten, worker_env shell-quoted (checked by running the lines in bash), and
Ctrl-C kept working after dask_jobqueue is imported.
"""

from __future__ import annotations

import subprocess
import sys

import dask
import pytest

from pipeline.cluster import ClusterConfig, ClusterError, make_client, make_cluster
from pipeline.cluster.jobqueue import refusal


def _script(**settings) -> str:
    cluster = make_cluster(ClusterConfig(mode=settings.pop("mode", "slurm"), **settings))
    try:
        return cluster.job_script()
    finally:
        cluster.close()


def test_each_setting_is_a_directive_or_a_worker_option(tmp_path):
    script = _script(
        cores=4,
        memory="8GiB",
        processes=2,
        walltime="00:45:00",
        queue="short",
        account="lab42",
        job_name="kf-test",
        python="/opt/venv/bin/python",
        log_directory=str(tmp_path / "logs"),
        lifetime=600,
        job_script_prologue=("source /opt/venv/bin/activate",),
    )
    for line in (
        "#SBATCH -J kf-test",
        f"#SBATCH -o {tmp_path}/logs/kf-test-%J.out",
        f"#SBATCH -e {tmp_path}/logs/kf-test-%J.err",
        "#SBATCH -p short",
        "#SBATCH -A lab42",
        "#SBATCH --cpus-per-task=4",
        "#SBATCH --mem=8G",
        "#SBATCH -t 00:45:00",
        "source /opt/venv/bin/activate",
        "/opt/venv/bin/python -m distributed.cli.dask_worker",
        "--nworkers 2",
        "--nthreads 2",
        "--memory-limit 4.00GiB",
        "--lifetime 600s --lifetime-stagger 60s",
    ):
        assert line in script, line
    assert (tmp_path / "logs").is_dir()


def test_defaults_one_single_threaded_worker_per_core_and_logs_out_of_the_cwd():
    script = _script(cores=3)
    assert "--nworkers 3" in script and "--nthreads 1" in script
    assert "#SBATCH -J kinefit-worker" in script
    assert "/.kinefit/jobs/kinefit-worker-%J.out" in script
    assert f"{sys.executable} -m distributed.cli.dask_worker" in script


def test_the_users_dask_jobqueue_config_is_merged_not_overwritten():
    user = {
        "jobqueue.slurm.job-script-prologue": ["module load python/3.12"],
        "jobqueue.slurm.job-extra-directives": ["--qos=long"],
        "jobqueue.slurm.worker-extra-args": ["--no-dashboard"],
        "jobqueue.slurm.queue": "users-queue",
        "jobqueue.slurm.cores": 6,
    }
    with dask.config.set(user):
        script = _script(job_extra_directives=("--exclusive",), job_script_prologue=("echo hi",))
    lines = script.splitlines()
    assert "#SBATCH --qos=long" in lines and "#SBATCH --exclusive" in lines
    assert lines.index("module load python/3.12") < lines.index("echo hi")
    assert "--no-dashboard" in script
    assert "#SBATCH -p users-queue" in script  # unset here: the user's value
    assert "#SBATCH --cpus-per-task=6" in script and "--nworkers 6" in script


def test_a_cluster_after_a_config_block_that_took_the_jobqueue_defaults(monkeypatch):
    """dask_jobqueue imported inside ``dask.config.set({"jobqueue.slurm.queue": ...})``:
    the block's end deletes the ``jobqueue`` key it inserted, defaults and all."""
    _script()  # dask_jobqueue imported
    monkeypatch.delitem(dask.config.config, "jobqueue")  # what the block's end leaves
    script = _script(cores=2)
    assert "--nworkers 2" in script and "#SBATCH -J kinefit-worker" in script


def test_worker_env_arrives_unchanged_in_bash():
    value = "two words $HOME 'quoted' \"double\" ;rm"
    script = _script(worker_env={"KINEFIT_NOTE": value})
    exports = [line for line in script.splitlines() if line.startswith("export ")]
    shell = "\n".join([*exports, 'printf %s "$KINEFIT_NOTE"'])
    out = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, check=True)
    assert out.stdout == value
    nanny = [line for line in exports if "PRE_SPAWN_ENVIRON" in line]
    assert len(nanny) == 1


def test_scheduler_interface_separate_from_the_workers():
    config = ClusterConfig(mode="slurm", cores=1, interface="lo", scheduler_interface="lo")
    cluster = make_cluster(config)
    try:
        assert "--interface lo" in cluster.job_script()
        assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
    finally:
        cluster.close()


def test_an_unknown_interface_is_one_clear_error():
    with pytest.raises(ClusterError, match="cannot start the SLURM cluster: .*nosuch0"):
        make_cluster(ClusterConfig(mode="slurm", cores=1, interface="nosuch0"))


def test_pbs_job_script():
    script = _script(mode="pbs", cores=4, memory="4GiB", queue="batch", walltime="01:00:00")
    for line in ("#PBS -q batch", "#PBS -l walltime=01:00:00", "--nworkers 4", "--nthreads 1"):
        assert line in script, line


def test_batch_mode_needs_jobs_and_processes_fit_in_cores():
    with pytest.raises(ClusterError, match="n_workers is the number of SLURM jobs"):
        make_client(ClusterConfig(mode="slurm", n_workers=0))
    with pytest.raises(ValueError, match=r"processes \(4\) per job exceeds its cores \(2\)"):
        ClusterConfig(mode="slurm", cores=2, processes=4)


def test_refusal_is_the_schedulers_first_error_line():
    text = (
        "Command exited with non-zero exit code.\nExit code: 1\nCommand:\nsbatch /tmp/x.sh\n"
        "stdout:\n\nstderr:\nsbatch: error: invalid partition specified: nosuch\n"
        "sbatch: error: Batch job submission failed: Invalid partition name specified\n\n"
    )
    assert refusal(RuntimeError(text), "sbatch", "SLURM") == (
        "SLURM refused the worker jobs: sbatch: error: invalid partition specified: nosuch"
    )
    missing = refusal(FileNotFoundError(2, "No such file"), "sbatch", "SLURM")
    assert missing.startswith("cannot submit SLURM jobs: 'sbatch' is not on the PATH")


@pytest.mark.slow  # a fresh interpreter imports dask_jobqueue
def test_importing_dask_jobqueue_keeps_ctrl_c_a_keyboard_interrupt():
    code = (
        "import signal\n"
        "from pipeline.cluster.jobqueue import import_jobqueue\n"
        "import_jobqueue('slurm')\n"
        "print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
    raw = "import signal, dask_jobqueue; print(signal.getsignal(signal.SIGINT).__name__)"
    out = subprocess.run([sys.executable, "-c", raw], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "<lambda>"  # what the import does without the guard
