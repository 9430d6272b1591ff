import pytest
from pydantic import ValidationError

from pipeline.cluster import (
    BLAS_ENV,
    MALLOC_ENV,
    ClusterConfig,
    ClusterError,
    cluster_client,
    make_client,
    make_cluster,
)

# make check skips it: starts real local Dask clusters
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _worker_state():
    import os
    import sys

    import threadpoolctl

    pools = [p["num_threads"] for p in threadpoolctl.threadpool_info()]
    names = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MALLOC_TRIM_THRESHOLD_", "KF_X")
    env = {k: os.environ.get(k) for k in names}
    return env, pools, "prefect" in sys.modules


def test_local_cluster_single_threaded_workers_with_blas_pinned():
    config = ClusterConfig(n_workers=2, worker_env={"KF_X": "on"})
    with cluster_client(config) as client:
        assert sorted(client.nthreads().values()) == [1, 1]
        states = client.run(_worker_state)
        cluster = client._kinefit_owned_cluster
    assert len(states) == 2
    for env, pools, prefect_loaded in states.values():
        assert env == {
            "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
            "MALLOC_TRIM_THRESHOLD_": MALLOC_ENV["MALLOC_TRIM_THRESHOLD_"],
            "KF_X": "on",
        }
        assert all(n == 1 for n in pools)
        assert not prefect_loaded
    assert cluster.status.name == "closed"


def test_slurm_job_script_without_a_queue():
    config = ClusterConfig(
        mode="slurm",
        n_workers=0,
        cores=8,
        memory="16GiB",
        walltime="02:00:00",
        queue="short",
        account="lab42",
        job_extra_directives=("--exclusive",),
        worker_env={"KINEFIT_X": "1"},
    )
    cluster = make_cluster(config)
    try:
        script = cluster.job_script()
    finally:
        cluster.close()
    for line in (
        "#SBATCH -p short",
        "#SBATCH -A lab42",
        "#SBATCH --cpus-per-task=8",
        "#SBATCH -t 02:00:00",
        "#SBATCH --exclusive",
        "export OPENBLAS_NUM_THREADS=1",
        "export KINEFIT_X=1",
        "--nthreads 1",
        "--nworkers 8",
        "export DASK_DISTRIBUTED__NANNY__PRE_SPAWN_ENVIRON='{",
        '"MALLOC_MMAP_THRESHOLD_": "33554432"',
    ):
        assert line in script


def test_pbs_job_script_without_a_queue():
    cluster = make_cluster(ClusterConfig(mode="pbs", n_workers=0, cores=4, queue="batch"))
    try:
        script = cluster.job_script()
    finally:
        cluster.close()
    assert "#PBS -q batch" in script and "--nthreads 1" in script
    assert all(f"export {k}={v}" in script for k, v in BLAS_ENV.items())


def test_kubernetes_without_the_extra_says_how_to_install():
    try:
        import dask_kubernetes  # noqa: F401
    except ImportError:
        with pytest.raises(ClusterError, match=r"pip install 'kinefit\[kubernetes\]'"):
            make_cluster(ClusterConfig(mode="kubernetes"))
    else:  # pragma: no cover - only where the extra is installed
        pytest.skip("dask-kubernetes is installed; no cluster to talk to here")


def test_config_validation():
    with pytest.raises(ValidationError, match="mode 'address' needs address"):
        ClusterConfig(mode="address")
    with pytest.raises(ValidationError, match="address is only used by mode 'address'"):
        ClusterConfig(address="tcp://x:1")
    with pytest.raises(ValidationError, match="mode"):
        ClusterConfig(mode="cloud")
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        ClusterConfig(n_wrokers=3)
    with pytest.raises(ClusterError, match="address mode|use make_client"):
        make_cluster(ClusterConfig(mode="address", address="tcp://127.0.0.1:1"))


def test_config_from_yaml(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text("mode: slurm\nn_workers: 4\ncores: 16\nqueue: gpu\n")
    config = ClusterConfig.from_yaml(path)
    assert (config.mode, config.n_workers, config.cores, config.queue) == ("slurm", 4, 16, "gpu")
    path.write_text("mode: local\nworkers: 4\n")
    with pytest.raises(
        ClusterError,
        match=r"cluster.yaml: invalid cluster config: workers: Extra inputs are not "
        r"permitted; valid settings: mode, n_workers",
    ):
        ClusterConfig.from_yaml(path)


def test_address_mode_to_an_unreachable_scheduler_fails_clearly():
    import dask

    config = ClusterConfig(mode="address", address="tcp://127.0.0.1:9")
    with (
        dask.config.set({"distributed.comm.timeouts.connect": "1s"}),
        pytest.raises(OSError, match="127.0.0.1:9"),
    ):
        make_client(config)
