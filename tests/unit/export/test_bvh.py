"""BVH export read back by an independent reader (bvhio) puts every joint where the fit did."""

from __future__ import annotations

import bvhio
import numpy as np
import pytest

from pipeline.bodyplan import load_body_plan
from pipeline.errors import ExportError
from pipeline.export import export
from pipeline.export.common import fit_plan
from pipeline.synth import body_size


def _read_back(path, plan, frames):
    """World joint positions ``(frames, joint, 3)`` of a BVH file, by bvhio."""
    root = bvhio.readAsHierarchy(str(path))
    joints = {joint.Name: joint for joint, *_ in root.layout()}
    out = []
    for f in frames:
        root.loadPose(int(f))
        out.append([list(joints[name].PositionWorld) for name in plan.joint_names])
    return np.asarray(out, dtype=np.float64)


@pytest.mark.parametrize("session", ["walk", "hop"])
def test_bvh_reproduces_the_fitted_keypoints(session, request, fits_root, tmp_path):
    fit = request.getfixturevalue(session)
    store = fits_root / ("walk.zarr" if session == "walk" else "lab_b/hop.zarr")
    plan = fit_plan(fit)
    result = export("bvh", store, tmp_path / f"{session}.bvh")
    individuals = [str(i) for i in fit["individual"].values]
    assert len(result.files) == len(individuals)
    size = body_size(plan)
    frames = np.arange(0, fit.sizes["time"], 9)
    for name, path in zip(individuals, result.files, strict=True):
        got = _read_back(path, plan, frames)
        want = fit["fitted_position"].sel(individual=name).transpose("time", "keypoint", "space")
        want = np.asarray(want.values, dtype=np.float64)[frames]
        assert np.abs(got - want).max() < 1e-5 * size
        container = bvhio.readAsBvh(str(path))
        assert container.FrameCount == fit.sizes["time"]
        assert container.FrameTime == pytest.approx(1 / fit.attrs["fps"], rel=1e-9)
        assert container.Root.Channels[:3] == ["Xposition", "Yposition", "Zposition"]


def test_every_joint_has_three_rotation_channels_in_the_stated_order(hop, fits_root, tmp_path):
    path = export("bvh", fits_root / "lab_b/hop.zarr", tmp_path / "h.bvh", rotation_order="yxz")
    root = bvhio.readAsBvh(str(path.files[0])).Root
    stack = [root]
    while stack:
        joint = stack.pop()
        rotations = [c for c in joint.Channels if c.endswith("rotation")]
        assert rotations == ["Yrotation", "Xrotation", "Zrotation"]
        stack.extend(joint.Children)
    plan = fit_plan(hop)
    got = _read_back(path.files[0], plan, [5])
    want = hop["fitted_position"].isel(individual=0, time=5).transpose("keypoint", "space")
    assert np.abs(got[0] - want.values).max() < 1e-5 * body_size(plan)


def test_one_individual_and_bad_options(walk, fits_root, tmp_path):
    store = fits_root / "walk.zarr"
    single = export("bvh", store, tmp_path / "one.bvh", individual="individual_1")
    assert single.files == (tmp_path / "one.bvh",)
    with pytest.raises(ExportError, match=r"no individual 'nobody'; individuals: individual_0"):
        export("bvh", store, tmp_path / "x.bvh", individual="nobody")
    with pytest.raises(ExportError, match=r"rotation order 'ZZY'; valid: ZXY"):
        export("bvh", store, tmp_path / "x.bvh", rotation_order="ZZY")
    assert not (tmp_path / "x.bvh").exists()


def _chain(orders: list[list[str]], fixed_base: bool) -> dict:
    """A chain whose joint ``i`` has the DOF types ``orders[i]`` on tilted axes."""
    axes = {"hinge": [[0, 0, 1], [1, 0, 0], [0, 1, 0]], "slide": [[1, 0, 0], [0, 0.6, 0.8]]}
    joints = []
    for i, types in enumerate(orders):
        used = {"hinge": 0, "slide": 0}
        dofs = []
        for t in types:
            dofs.append({"type": t, "axis": axes[t][used[t] % len(axes[t])], "neutral": 0})
            used[t] += 1
        joints.append(
            {
                "name": f"j{i}",
                "parent": None if i == 0 else f"j{i - 1}",
                "offset_pos": [0, 0, 0] if i == 0 else [0.3, 0.1 * i, 0.05],
                "offset_quat": [1, 0, 0, 0] if i % 2 else [0.9, 0.3, 0.1, 0.3],
                "dofs": dofs,
            }
        )
    return {"fixed_base": fixed_base, "joints": joints}


def _bvh_positions(plan, q, rp, rq, tmp_path, order="ZXY"):
    """bvhio's world joint positions of the BVH of poses, and kinefit's FK of them."""
    from pipeline.export.bvh import bvh_text, motion
    from pipeline.kinematics import forward_kinematics

    position, channels, slides = motion(plan, q, rp, rq, order)
    path = tmp_path / "slides.bvh"
    path.write_text(bvh_text(plan, 30.0, position, channels, order, slides))
    got = _read_back(path, plan, range(q.shape[0]))
    return got, forward_kinematics(plan, q, rp, rq), path


@pytest.mark.parametrize("fixed_base", [True, False])
def test_slides_are_position_channels_that_read_back_where_fk_puts_every_joint(
    fixed_base, tmp_path
):
    # slides before, after and between hinges, on the root, mid-chain and on the leaf
    orders = [["slide", "hinge"], ["hinge", "slide", "hinge"], [], ["slide", "slide"], ["hinge"]]
    orders.append(["hinge", "slide"])
    plan = load_body_plan(_chain(orders, fixed_base))
    rng = np.random.default_rng(3)
    q = rng.uniform(-0.8, 0.8, (6, plan.n_dofs))
    rp = rng.uniform(-1, 1, (6, 3))
    rq = rng.normal(size=(6, 4))
    rq /= np.linalg.norm(rq, axis=1, keepdims=True)
    got, want, path = _bvh_positions(plan, q, rp, rq, tmp_path)
    np.testing.assert_allclose(got, want, atol=1e-6)
    text = path.read_text()
    for name in ("j0_slide", "j1_slide", "j3_slide", "j5_slide"):  # one per slide joint
        assert f"JOINT {name}\n" in text
    assert "j2_slide" not in text and "j4_slide" not in text
    from pipeline.kinematics.fk_jacobian import joint_frames

    origins = joint_frames(plan, q, rp, rq)[1]  # a slide child is its joint's moved origin
    root = bvhio.readAsHierarchy(str(path))
    named = {joint.Name: joint for joint, *_ in root.layout()}
    for f in range(q.shape[0]):
        root.loadPose(f)
        for j in (0, 1, 3, 5):
            np.testing.assert_allclose(named[f"j{j}_slide"].PositionWorld, origins[f, j], atol=1e-6)
    stack = [bvhio.readAsBvh(str(path)).Root]
    while stack:  # the slide children carry position channels only, at zero offset
        joint = stack.pop()
        if joint.Name.endswith("_slide"):
            assert joint.Channels == ["Xposition", "Yposition", "Zposition"]
            assert list(joint.Offset) == [0, 0, 0]
        stack.extend(joint.Children)
    zero = np.zeros((1, plan.n_dofs))  # zero channels are the rest pose
    got, want, _ = _bvh_positions(plan, zero, rp[:1], rq[:1], tmp_path)
    np.testing.assert_allclose(got, want, atol=1e-6)


def test_pose2sim_s_opensim_model_with_its_translating_knees_exports_to_bvh(tmp_path):
    import warnings

    from tests.fixtures.shared_data import SHARED

    model = SHARED / "data" / "pose2sim" / "opensim" / "Model_Pose2Sim_body25b_scaled.osim"
    if not model.is_file():
        pytest.skip(f"{model}: the shared Pose2Sim demo is not here")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = load_body_plan(model)
    # pelvis translations on the ground joint, the knees' and spine's coupled translations
    rng = np.random.default_rng(5)
    q = rng.uniform(-0.4, 0.4, (4, plan.n_dofs))
    rp, rq = np.zeros((4, 3)), np.tile([1.0, 0, 0, 0], (4, 1))
    got, want, path = _bvh_positions(plan, q, rp, rq, tmp_path, order="XYZ")
    assert np.abs(got - want).max() < 1e-6 * body_size(plan)
    from pipeline.tracks import read_tracks

    for translation in ("add", "replace"):  # zero offsets: both readings of the channels agree
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # no unit in BVH
            ds = read_tracks(path, translation=translation)
        ours = ds["position"].isel(individual=0).sel(keypoint=list(plan.joint_names))
        ours = ours.transpose("time", "keypoint", "space").values
        assert np.abs(ours - want).max() < 1e-6 * body_size(plan)
