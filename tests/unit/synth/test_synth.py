import numpy as np
import pytest
import xarray as xr

from pipeline.bodyplan import load_body_plan, mannequin
from pipeline.kinematics.fk_jacobian import forward_kinematics
from pipeline.synth import SynthConfig, body_size, synthesize
from pipeline.tracks import validate_tracks


@pytest.fixture(scope="module")
def fly(fly_plan_path):
    return load_body_plan(fly_plan_path)


@pytest.fixture(scope="module", params=["fly", "mannequin"])
def plan(request, fly_plan_path):
    return load_body_plan(fly_plan_path) if request.param == "fly" else mannequin()


def test_clean_session_is_forward_kinematics_of_the_truth(plan, rng):
    session = synthesize(plan, SynthConfig(n_frames=120, n_individuals=2), rng)
    tracks, truth = session
    validate_tracks(tracks)
    assert tracks.sizes == {"time": 120, "space": 3, "keypoint": plan.n_joints, "individual": 2}
    assert list(tracks["keypoint"].values) == list(plan.joint_names)
    for i in range(2):
        truth_i = truth.isel(individual=i)
        points = forward_kinematics(
            plan,
            truth_i["dof_value"].values,
            truth_i["root_position"].values,
            truth_i["root_orientation"].values,
        )
        measured = tracks["position"].isel(individual=i).values.transpose(0, 2, 1)
        np.testing.assert_allclose(measured, points, atol=1e-5 * body_size(plan))


def test_dofs_stay_inside_limits_and_swings_inside_their_cones(rng):
    plan = mannequin()
    truth = synthesize(plan, SynthConfig(n_frames=400, amplitude=3.0), rng).truth
    q = truth["dof_value"].values[:, 0]
    assert np.all(q >= plan.lower) and np.all(q <= plan.upper)
    index = 0
    for joint in plan.joints:
        types = [d.type for d in joint.dofs]
        if types[:2] == ["swing", "swing"] and joint.kind.swing_limit:
            hy, hz = joint.kind.swing_limit
            radius = (q[:, index] / hy) ** 2 + (q[:, index + 1] / hz) ** 2
            assert radius.max() < 1.0
        index += len(joint.dofs)


def test_trajectories_are_smooth(fly, rng):
    truth = synthesize(fly, SynthConfig(n_frames=500, fps=100.0), rng).truth
    step = np.abs(np.diff(truth["dof_value"].values, axis=0)).max()
    assert step < 0.05  # rad per frame at 100 fps


@pytest.mark.slow
def test_measurement_noise_dropouts_outliers_and_confidence(fly, rng):
    config = SynthConfig(n_frames=2000, noise=0.01, dropout=0.1, dropout_run=4, outliers=0.02)
    tracks, truth = synthesize(fly, config, rng)
    missing = tracks["position"].isnull().any("space")
    assert 0.07 < float(missing.mean()) < 0.13
    confidence = tracks["confidence"]
    assert float(confidence.where(missing).max()) == 0.0
    assert float(confidence.where(~missing).min()) >= 0.0
    error = np.linalg.norm((tracks["position"] - truth["position"]).values, axis=1)
    size = body_size(fly)
    far = error > 0.1 * size
    assert 0.01 < np.nanmean(far) < 0.03  # the outliers
    assert np.nanmedian(error) == pytest.approx(0.01 * size * np.sqrt(3), rel=0.2)
    low = confidence.values[far.transpose(0, 1, 2)]
    assert np.nanmean(low) < 0.6


def test_same_generator_state_same_session(fly):
    config = SynthConfig(n_frames=50, noise=0.01, dropout=0.1, n_individuals=2)
    a = synthesize(fly, config, np.random.default_rng(7))
    b = synthesize(fly, config, np.random.default_rng(7))
    xr.testing.assert_identical(a.tracks, b.tracks)
    c = synthesize(fly, config, np.random.default_rng(8))
    assert not np.allclose(a.truth["dof_value"], c.truth["dof_value"])


def test_mannequin_sessions_stay_upright_about_their_up_axis():
    from pipeline.bodyplan import mannequin
    from pipeline.kinematics.rotations import quat_to_matrix
    from pipeline.synth import SynthConfig, synthesize

    plan = mannequin()
    cfg = SynthConfig(n_frames=200, up_axis="y", unit="m", n_individuals=2)
    session = synthesize(plan, cfg, np.random.default_rng(0))
    assert session.tracks.attrs["up_axis"] == "y"
    assert session.tracks.attrs["unit"] == "m"
    rot = quat_to_matrix(session.truth["root_orientation"].values)
    # the body's own up (+y) stays within ~30 degrees of the world's up
    assert np.all(rot[..., 1, 1] > np.cos(np.radians(30)))
    with pytest.raises(ValueError, match="up_axis: 'w' is not one of x, y, z"):
        SynthConfig(up_axis="w")


def test_a_locked_coordinate_keeps_its_one_value(rng):
    """lower == upper (OpenSim's locked coordinates): the truth holds that value, never
    the NaN of a zero span's division, and the keypoints are its forward kinematics."""
    import warnings

    joints = [
        {"name": "root", "parent": None, "offset_pos": [0, 0, 0], "dofs": []},
        {"name": "a", "parent": "root", "offset_pos": [0.3, 0, 0],
         "dofs": [{"type": "hinge", "axis": [0, 0, 1], "limits": [-1.0, 1.0]},
                  {"type": "hinge", "axis": [1, 0, 0], "neutral": 0.4, "limits": [0.4, 0.4]}]},
        {"name": "b", "parent": "a", "offset_pos": [0.4, 0, 0], "dofs": []},
        {"name": "c", "parent": "b", "offset_pos": [0.2, 0.1, 0], "dofs": []},
    ]  # fmt: skip
    for j in joints:
        j["offset_quat"] = [1.0, 0.0, 0.0, 0.0]
        for d in j["dofs"]:
            d.setdefault("neutral", 0.0)
    plan = load_body_plan({"fixed_base": True, "joints": joints})
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        session = synthesize(plan, SynthConfig(n_frames=20), rng)
    q = session.truth["dof_value"].isel(individual=0).values
    np.testing.assert_array_equal(q[:, 1], 0.4)
    assert np.ptp(q[:, 0]) > 0.01  # the free hinge moves
    positions = forward_kinematics(plan, q)
    truth = session.truth["position"].isel(individual=0).transpose("time", "keypoint", "space")
    np.testing.assert_allclose(truth.values, positions, atol=1e-9)
