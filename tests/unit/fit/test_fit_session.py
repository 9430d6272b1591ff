"""Acceptance: round trip, chunking invariance, fingerprints, individuals."""

import dataclasses
import pickle

import numpy as np
import pytest
import xarray as xr
import zarr

from pipeline.bodyplan import body_plan_sha256, load_body_plan
from pipeline.cluster import ClusterConfig, cluster_client
from pipeline.fit import ChunkTask, fit_session
from pipeline.kinematics.fk_jacobian import forward_kinematics, joint_rotations_local
from pipeline.solve import SolverConfig
from pipeline.store import open_tracks, write_tracks
from pipeline.store.fit import fitted_poses, open_fit
from pipeline.synth import SynthConfig, synthesize
from pipeline.tracks.mapping import map_keypoints

# make check skips it: fits whole sessions
pytestmark = pytest.mark.slow

#: Converges every chunking to the same optimum (LM, tolerances far below 1e-4 rad).
TIGHT = SolverConfig(
    n_iterations=60, position_tolerance=1e-10, angle_tolerance=1e-10, cost_tolerance=0.0
)
DOF = ("time", "individual", "dof")
FIT_VARIABLES = {
    "root_position": ("time", "individual", "space"),
    "root_orientation": ("time", "individual", "quat"),
    "joint_rotation": ("time", "individual", "joint", "quat"),
    "dof_value": ("time", "individual", "dof"),
    "fitted_position": ("time", "space", "keypoint", "individual"),
    "residual": ("time", "individual", "keypoint"),
    "rms_error": ("time", "individual"),
    "max_error": ("time", "individual"),
    "iterations": ("time", "individual"),
    "converged": ("time", "individual"),
    "stop_reason": ("time", "individual"),
    "objective": ("time", "individual"),
    "limit_active": ("time", "individual", "dof"),
    "seam_dof_value": ("seam", "overlap", "individual", "dof"),
    "seam_disagreement": ("seam", "individual"),
    **dict.fromkeys(("dof_std", "dof_velocity", "dof_acceleration", "dof_observable"), DOF),
    **dict.fromkeys(
        (
            "root_position_std",
            "root_orientation_std",
            "root_velocity",
            "root_angular_velocity",
            "root_acceleration",
            "root_angular_acceleration",
        ),
        ("time", "individual", "space"),
    ),
}
FIT_COORDS = {"time", "individual", "space", "quat", "joint", "keypoint", "dof", "seam", "overlap"}
FIT_ATTRS = {
    "schema_version",
    "body_plan",
    "body_plan_sha256",
    "solver_config",
    "fingerprint",
    "input_sha256",
    "kinefit_version",
    "created",
    "timings",
}


@pytest.fixture(scope="module")
def plan(fly_plan_path):
    return load_body_plan(fly_plan_path)


@pytest.fixture(scope="module")
def client():
    with cluster_client(ClusterConfig(n_workers=2)) as c:
        yield c


@pytest.fixture(scope="module")
def session(plan, tmp_path_factory):
    config = SynthConfig(n_frames=600, n_individuals=2, noise=0.002, dropout=0.02)
    synth = synthesize(plan, config, np.random.default_rng(4))
    path = write_tracks(synth.tracks, tmp_path_factory.mktemp("tracks") / "s.zarr", 200)
    return path, synth


def _data(fit):
    return fit.drop_attrs().load()


@pytest.mark.slow
def test_round_trip_store_has_exactly_the_design_layout(plan, session, client, tmp_path):
    tracks_path, synth = session
    out = tmp_path / "fit.zarr"
    report = fit_session(tracks_path, plan, SolverConfig(), out, client=client, chunk_frames=150)
    assert not report.skipped and report.chunks_fitted == (0, 1, 2, 3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fit.zarr"]  # no partial left
    fit = open_fit(out)
    assert {n: fit[n].dims for n in fit.data_vars} == FIT_VARIABLES
    assert set(fit.coords) == FIT_COORDS
    assert set(fit.attrs) >= FIT_ATTRS and fit.attrs["complete"] is True
    assert fit.attrs["body_plan_sha256"] == body_plan_sha256(plan)
    assert SolverConfig.from_dict(fit.attrs["solver_config"]) == SolverConfig()
    assert list(fit["dof"].values) == list(plan.dof_names)
    assert list(fit["joint"].values) == list(plan.joint_names)
    assert list(fit["quat"].values) == ["w", "x", "y", "z"]
    np.testing.assert_array_equal(fit["time"], synth.tracks["time"])
    group = zarr.open_group(out, mode="r")
    for name, dims in FIT_VARIABLES.items():
        if dims[0] == "time":
            assert group[name].chunks[0] == 150 and fit[name].chunks[0][0] == 150
    assert group["iterations"].fill_value == -1
    assert int(fit["iterations"].min()) >= 1 and float(fit["converged"].mean()) > 0.95
    # stop_reason is written for every frame and agrees with converged (0 = converged)
    reason = fit["stop_reason"].values
    assert reason.min() >= 0 and np.array_equal(reason == 0, fit["converged"].values)
    assert float(fit["rms_error"].max()) < 0.05  # noise is 0.002 x body size (~3 mm)
    # the canonical pose is consistent with the keypoints and the joint rotations
    for i in range(2):
        one = fit.isel(individual=i)
        points = forward_kinematics(
            plan,
            one["dof_value"].values,
            one["root_position"].values,
            one["root_orientation"].values,
        )
        np.testing.assert_allclose(
            one["fitted_position"].values.transpose(0, 2, 1), points, atol=1e-5
        )
        quats = joint_rotations_local(plan, one["dof_value"].values)
        np.testing.assert_allclose(one["joint_rotation"].values, quats, atol=1e-6)
    poses = fitted_poses(fit)
    assert poses["position"].dims == ("time", "space", "keypoint", "individual")
    assert poses.attrs["ds_type"] == "poses" and poses.attrs["fps"] == 100.0
    seams = fit["seam_disagreement"].values
    assert np.isnan(seams[0]).all() and np.all(seams[1:] < 1e-3)


def test_a_relative_out_is_this_process_s_folder_not_the_workers(
    plan, session, client, tmp_path, monkeypatch
):
    """Workers started elsewhere (a batch job's folder) write into the caller's ``out``."""
    tracks_path, synth = session
    workers_cwd = client.run(lambda: __import__("os").getcwd())
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)  # the cluster's workers stay in the folder they started in
    assert all(cwd != str(here) for cwd in workers_cwd.values())
    report = fit_session(tracks_path, plan, SolverConfig(), "rel.zarr", client=client)
    assert report.out == here / "rel.zarr" and report.chunks_fitted == (0, 1, 2)
    fit = open_fit("rel.zarr")
    assert fit.attrs["complete"] is True and fit.sizes["time"] == len(synth.tracks["time"])
    assert np.isfinite(fit["dof_value"].values).mean() > 0.95
    assert sorted(p.name for p in here.iterdir()) == ["rel.zarr"]


@pytest.mark.slow
def test_chunking_invariance_three_chunk_sizes_one_and_two_workers(
    plan, client, tmp_path, record_property
):
    synth = synthesize(plan, SynthConfig(n_frames=240, noise=0.002), np.random.default_rng(5))
    tracks_path = write_tracks(synth.tracks, tmp_path / "t.zarr", chunk_frames=240)
    fits = {}
    for chunk in (240, 120, 80):
        out = tmp_path / f"c{chunk}.zarr"
        fit_session(tracks_path, plan, TIGHT, out, client=client, chunk_frames=chunk)
        fits[(chunk, 2)] = open_fit(out)["dof_value"].values
    with cluster_client(ClusterConfig(n_workers=1)) as one:
        out = tmp_path / "one_worker.zarr"
        fit_session(tracks_path, plan, TIGHT, out, client=one, chunk_frames=80)
        fits[(80, 1)] = open_fit(out)["dof_value"].values
    reference = fits[(240, 2)]
    worst = max(float(np.max(np.abs(v - reference))) for v in fits.values())
    record_property("max_dof_difference_rad", worst)
    print(f"chunking invariance: max |dof difference| = {worst:.3g} rad")
    assert worst < 1e-4
    np.testing.assert_array_equal(fits[(80, 1)], fits[(80, 2)])


@pytest.mark.slow
def test_fingerprint_skips_a_current_fit_and_refits_on_any_change(plan, tmp_path, rng):
    synth = synthesize(plan, SynthConfig(n_frames=120), rng)
    tracks = write_tracks(synth.tracks, tmp_path / "t.zarr", chunk_frames=60)
    out = tmp_path / "f.zarr"
    first = fit_session(tracks, plan, SolverConfig(), out)
    created = open_fit(out).attrs["created"]
    again = fit_session(tracks, plan, SolverConfig(), out)
    assert not first.skipped and again.skipped and again.chunks_fitted == ()
    assert open_fit(out).attrs["created"] == created
    assert again.fingerprint == first.fingerprint

    joints = list(plan.joints)
    joints[3] = dataclasses.replace(joints[3], weight_scaler=0.5)
    other_plan = dataclasses.replace(plan, joints=tuple(joints))
    changed = fit_session(tracks, other_plan, SolverConfig(), out)
    assert not changed.skipped and changed.fingerprint != first.fingerprint

    config = SolverConfig(neutral_weight=1e-2)
    assert not fit_session(tracks, other_plan, config, out).skipped
    assert fit_session(tracks, other_plan, config, out).skipped

    edited = synth.tracks.copy(deep=True)
    edited["position"][17, 1, 5, 0] += 1e-3
    write_tracks(edited, tracks, chunk_frames=60, overwrite=True)
    assert not fit_session(tracks, other_plan, config, out).skipped
    assert fit_session(tracks, other_plan, config, out).skipped
    assert not fit_session(tracks, other_plan, config, out, force=True).skipped


def test_individuals_are_fitted_independently(plan, tmp_path, rng):
    synth = synthesize(plan, SynthConfig(n_frames=240, n_individuals=2, noise=0.002), rng)
    both = write_tracks(synth.tracks, tmp_path / "both.zarr", chunk_frames=80)
    fit_session(both, plan, SolverConfig(), tmp_path / "both_fit.zarr")
    damaged = synth.tracks.copy(deep=True)
    damaged["position"][50:170, :, :, 1] = np.nan  # individual_1 loses frames...
    damaged["position"][:, :, 4, 1] = np.nan  # ...and one keypoint entirely
    write_tracks(damaged, tmp_path / "damaged.zarr", chunk_frames=80)
    fit_session(tmp_path / "damaged.zarr", plan, SolverConfig(), tmp_path / "damaged_fit.zarr")
    alone = write_tracks(synth.tracks.isel(individual=[0]), tmp_path / "alone.zarr", 80)
    fit_session(alone, plan, SolverConfig(), tmp_path / "alone_fit.zarr")

    a = _data(open_fit(tmp_path / "both_fit.zarr"))
    b = _data(open_fit(tmp_path / "damaged_fit.zarr"))
    c = _data(open_fit(tmp_path / "alone_fit.zarr"))
    time_vars = [n for n in a.data_vars if "time" in a[n].dims]
    xr.testing.assert_equal(
        a[time_vars].sel(individual="individual_0"), b[time_vars].sel(individual="individual_0")
    )
    xr.testing.assert_equal(
        a[time_vars].sel(individual="individual_0"), c[time_vars].sel(individual="individual_0")
    )
    assert not np.allclose(
        a["dof_value"].sel(individual="individual_1"), b["dof_value"].sel(individual="individual_1")
    )


def test_chunk_tasks_carry_no_arrays(plan, session):
    tracks_path, _ = session
    ds = open_tracks(tracks_path)
    mapping = map_keypoints(ds["keypoint"].values, plan.joint_names)
    task = ChunkTask(str(tracks_path), "out.zarr", plan, TIGHT, mapping, 3, 300, 400, 16)
    assert len(pickle.dumps(task)) < 30_000
