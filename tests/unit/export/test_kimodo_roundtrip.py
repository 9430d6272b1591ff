"""Acceptance 1 and 4: fit -> Kimodo constraints -> IK targets round trips on three skeletons."""

import json

import numpy as np
import pytest

from pipeline.export.kimodo import (
    ExportConfig,
    FrameSpec,
    kimodo_body_plan,
    load_constraints,
    load_kimodo_skeleton,
)
from pipeline.export.kimodo.export import export_kimodo
from pipeline.export.kimodo.fk import heading_angle, kimodo_fk
from pipeline.export.kimodo.smooth import SMOOTH_ROOT_RADIUS
from pipeline.export.kimodo.targets import ROOT2D_WEIGHT
from pipeline.kinematics.rotations import expmap
from pipeline.store.fit import open_fit
from pipeline.tracks import read_tracks
from tests.fixtures.kimodo_motion import fit_store, upright_tracks
from tests.fixtures.shared_data import KIMODO

# make check skips it: fits exported motions back
pytestmark = pytest.mark.slow

SKELETONS = KIMODO / "skeletons.json"
#: skeleton -> (up axis of the tracks' world, tracks fps, tracks frames)
CASES = {
    "somaskel30": ("z", 60.0, 90),
    "g1skel34": ("y", 30.0, 50),
    "smplx22": ("-x", 45.0, 61),
}
CONFIG = ExportConfig(
    fullbody=FrameSpec(every=8),
    left_hand=FrameSpec((3, 17)),
    right_foot=FrameSpec(every=11),
    end_effector=FrameSpec((5, 29)),
    end_effector_joints=("Hips", "LeftFoot"),
    text="a person walks and turns",
)


@pytest.fixture(scope="module", params=sorted(CASES))
def exported(request, tmp_path_factory):
    name = request.param
    up, fps, n = CASES[name]
    folder = tmp_path_factory.mktemp(name)
    plan = kimodo_body_plan(load_kimodo_skeleton(SKELETONS, name))
    tracks = upright_tracks(plan, n, fps, np.random.default_rng(7), up_axis=up)
    fit = fit_store(plan, tracks, folder)
    report = export_kimodo(fit, SKELETONS, name, folder / "constraints.json", CONFIG)
    return name, fit, report


def test_import_targets_are_the_exported_motion_within_1mm(exported):
    name, fit, report = exported
    ds = read_tracks(report.out, format="kimodo", skeleton_file=SKELETONS, skeleton=name)
    assert ds.attrs["fps"] == 30 and ds.attrs["unit"] == "m" and ds.attrs["up_axis"] == "y"
    assert list(ds["keypoint"].values) == list(load_kimodo_skeleton(SKELETONS, name).joint_names)
    targets = ds["position"].values[..., 0].transpose(0, 2, 1)
    weight = ds["confidence"].values[..., 0]
    assert targets.shape[0] == report.motion.n_frames
    keyed = weight >= 1
    constrained_frames = sorted(
        {
            f
            for e in load_constraints(report.out, SKELETONS, name).entries
            if e.is_keyframe
            for f in e.frames.tolist()
        }
    )
    assert sorted(np.flatnonzero(keyed.any(axis=1)).tolist()) == constrained_frames
    error = np.linalg.norm(targets[keyed] - report.motion.positions[keyed], axis=-1)
    assert error.max() < 1e-3
    # ... and they are the fitted positions where a fitted frame falls on the 30 fps grid
    fitted = open_fit(fit)["fitted_position"].isel(individual=0)
    fitted = fitted.transpose("time", "keypoint", "space").values
    source = np.round(report.motion.source_time * CASES[name][1], 6)
    on_grid = np.flatnonzero(source == np.round(source))
    assert on_grid.size >= report.motion.n_frames // 2
    mapped = report.motion.to_kimodo(fitted[source[on_grid].astype(int)])
    sel = keyed[on_grid]
    assert np.linalg.norm(targets[on_grid][sel] - mapped[sel], axis=-1).max() < 1e-3


def test_canonical_start_heading_floor_and_smooth_root(exported):
    name, _, report = exported
    sk = load_kimodo_skeleton(SKELETONS, name)
    constraints = load_constraints(report.out, SKELETONS, name)
    entries = {e.type: e for e in constraints.entries}
    full = entries["fullbody"]
    positions, _ = kimodo_fk(sk, expmap(full.local_rot), full.root_positions)
    assert full.frames[0] == 0
    assert heading_angle(sk, positions)[0] == pytest.approx(0.0, abs=1e-6)
    np.testing.assert_allclose(full.root_positions[0, [0, 2]], 0.0, atol=1e-7)
    assert report.motion.positions[..., 1].min() == pytest.approx(0.0, abs=1e-9)
    assert abs(report.motion.start_heading) > 1e-3  # the fit did not start canonical
    root2d = entries["root2d"]
    np.testing.assert_array_equal(root2d.frames, np.arange(report.motion.n_frames))
    theta = heading_angle(sk, report.motion.positions)
    np.testing.assert_allclose(
        root2d.heading, np.stack([np.cos(theta), np.sin(theta)], 1), atol=1e-6
    )
    gap = root2d.smooth_root_2d - report.motion.root_positions[:, [0, 2]]
    assert np.linalg.norm(gap, axis=1).max() <= SMOOTH_ROOT_RADIUS + 1e-6
    rough = np.abs(np.diff(report.motion.root_positions[:, [0, 2]], 2, axis=0)).sum()
    assert np.abs(np.diff(root2d.smooth_root_2d, 2, axis=0)).sum() < rough
    # keyframe entries carry the root path's values: nothing conflicts
    np.testing.assert_array_equal(full.smooth_root_2d, root2d.smooth_root_2d[full.frames])


def test_file_layout_is_what_kimodo_reads(exported):
    name, _, report = exported
    n_joints = load_kimodo_skeleton(SKELETONS, name).n_joints
    data = json.loads(report.out.read_text())
    assert [e["type"] for e in data] == [
        "root2d",
        "fullbody",
        "left-hand",
        "right-foot",
        "end-effector",
    ]
    n = report.motion.n_frames
    for e in data:
        frames = e["frame_indices"]
        assert all(type(f) is int and 0 <= f < n for f in frames)
        assert len(e["smooth_root_2d"][0]) == 2
        if e["type"] == "root2d":
            assert set(e) == {"type", "frame_indices", "smooth_root_2d", "global_root_heading"}
            continue
        expected = {"type", "frame_indices", "local_joints_rot", "root_positions", "smooth_root_2d"}
        assert set(e) == expected | ({"joint_names"} if e["type"] == "end-effector" else set())
        rot = np.asarray(e["local_joints_rot"])
        assert rot.shape == (len(frames), n_joints, 3) and np.all(np.isfinite(rot))
    assert data[-1]["joint_names"] == ["Hips", "LeftFoot"]
    assert data[3]["frame_indices"] == list(range(0, n, 11))
    meta = json.loads(report.meta.read_text())
    assert meta["text"] == "a person walks and turns" and int(meta["duration"] * 30) == n
    assert report.segments == (n,)


def test_root_path_frames_become_soft_root_and_hip_targets(exported):
    name, _, report = exported
    sk = load_kimodo_skeleton(SKELETONS, name)
    ds = read_tracks(report.out, format="kimodo", skeleton_file=SKELETONS, skeleton=name)
    weight = ds["confidence"].values[..., 0]
    targets = ds["position"].values[..., 0].transpose(0, 2, 1)
    soft = np.flatnonzero(~(weight >= 1).any(axis=1))  # frames with the root path only
    assert soft.size > 0
    right, left = sk.hip_indices
    observed = np.isfinite(targets[soft]).all(axis=-1)
    assert observed[:, [0, right, left]].all() and observed.sum() == 3 * soft.size
    np.testing.assert_allclose(weight[soft][:, [0, right, left]], ROOT2D_WEIGHT, rtol=1e-6)
    root = report.motion.root_positions[soft]
    planar = np.linalg.norm(targets[soft, 0][:, [0, 2]] - root[:, [0, 2]], axis=1)
    assert planar.max() <= SMOOTH_ROOT_RADIUS + 1e-5
    # root height comes from the keyframes around it: the walk bobs by 3 cm at most
    assert np.abs(targets[soft, 0, 1] - root[:, 1]).max() < 0.08
