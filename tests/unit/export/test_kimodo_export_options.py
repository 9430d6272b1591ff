"""Export options and their errors: root path, frames, windows, units, floors, name maps."""

import json
import shutil

import numpy as np
import pytest
import zarr

from pipeline.bodyplan import body_plan_to_dict, load_body_plan, mannequin
from pipeline.export.kimodo import (
    ExportConfig,
    FrameSpec,
    KimodoError,
    KimodoWarning,
    export_kimodo,
    kimodo_body_plan,
    load_constraints,
    load_kimodo_skeleton,
)
from pipeline.export.kimodo.meta import segment_lengths
from pipeline.export.kimodo.retarget import build_retarget
from pipeline.store.fit import open_fit
from tests.fixtures.kimodo_motion import fit_store, upright_tracks
from tests.fixtures.shared_data import KIMODO

# make check skips it: fits sessions to export
pytestmark = pytest.mark.slow

SKELETONS = KIMODO / "skeletons.json"


@pytest.fixture(scope="module")
def smplx_fit(tmp_path_factory):
    folder = tmp_path_factory.mktemp("smplx")
    plan = kimodo_body_plan(load_kimodo_skeleton(SKELETONS, "smplx22"))
    tracks = upright_tracks(plan, 20, 30.0, np.random.default_rng(3), up_axis="y")
    return fit_store(plan, tracks, folder)


def export(fit, tmp_path, config=None, name="c.json", **kwargs):
    config = config or ExportConfig()
    kwargs.setdefault("meta", tmp_path / name.replace(".json", ".meta.json"))
    return export_kimodo(fit, SKELETONS, "smplx22", tmp_path / name, config, **kwargs)


def test_root2d_waypoints_without_heading(smplx_fit, tmp_path):
    report = export(
        smplx_fit, tmp_path, ExportConfig(root2d="waypoints", root2d_every=7, root2d_heading=False)
    )
    (entry,) = json.loads(report.out.read_text())
    assert entry["frame_indices"] == [0, 7, 14, 19] and "global_root_heading" not in entry


def test_every_keyframe_type_and_bad_frame_choices(smplx_fit, tmp_path):
    config = ExportConfig(
        root2d="off",
        fullbody=FrameSpec.parse("0,19", "--fullbody"),
        left_foot=FrameSpec.parse("every:5"),
        right_hand=FrameSpec((4,)),
        end_effector=FrameSpec((2,)),
        end_effector_joints=("LeftHand", "RightFoot"),
    )
    report = export(smplx_fit, tmp_path, config)
    assert report.frames == {"fullbody": 2, "right-hand": 1, "left-foot": 4, "end-effector": 1}
    with pytest.raises(
        KimodoError,
        match=r"fullbody: frames \[20\] are outside the exported "
        r"clip \[0, 20\)",
    ):
        export(smplx_fit, tmp_path, ExportConfig(fullbody=FrameSpec((0, 20))), name="x.json")
    with pytest.raises(KimodoError, match="nothing to export"):
        export(smplx_fit, tmp_path, ExportConfig(root2d="off"), name="x.json")
    with pytest.raises(KimodoError, match=r"--left-hand: 'every 3' is neither frame numbers"):
        FrameSpec.parse("every 3", "--left-hand")
    with pytest.raises(KimodoError, match="give both the frames and end_effector_joints"):
        ExportConfig(end_effector=FrameSpec((1,)))
    with pytest.raises(KimodoError, match=r"unknown \['Head'\]; valid: LeftHand"):
        ExportConfig(end_effector=FrameSpec((1,)), end_effector_joints=("Head",))
    with pytest.raises(KimodoError, match="root2d: 'sparse' is not one of dense, waypoints, off"):
        ExportConfig(root2d="sparse")
    with pytest.warns(KimodoWarning, match="20 keyframes; Kimodo works best with fewer than 20"):
        export(smplx_fit, tmp_path, ExportConfig(fullbody=FrameSpec(every=1)), name="y.json")


def test_long_clips_are_split_into_prompt_segments(smplx_fit, tmp_path):
    assert segment_lengths(300) == [300] and segment_lengths(301) == [151, 150]
    assert segment_lengths(900) == [300] * 3
    report = export(smplx_fit, tmp_path, ExportConfig(text="go", max_segment_frames=8))
    meta = json.loads(report.meta.read_text())
    assert report.segments == (7, 7, 6) and meta["texts"] == ["go"] * 3
    assert [int(d * 30) for d in meta["durations"]] == [7, 7, 6]
    assert load_constraints(report.out, SKELETONS, "smplx22").n_frames == 20


def test_time_window_floor_and_existing_files(smplx_fit, tmp_path):
    fit = open_fit(smplx_fit)
    report = export(smplx_fit, tmp_path, ExportConfig(start=0.2, stop=0.5, floor=0.0))
    assert report.motion.n_frames == 10
    np.testing.assert_allclose(report.motion.source_time, 0.2 + np.arange(10) / 30)
    root_y = fit["root_position"].sel(space="y").values[6:16, 0]
    np.testing.assert_allclose(report.motion.root_positions[:, 1], root_y, atol=1e-9)
    assert report.motion.heading[0] == pytest.approx(0.0, abs=1e-9)
    before = report.out.read_text()
    with pytest.raises(FileExistsError, match=r"c\.json, .*c\.meta\.json: already exists"):
        export(smplx_fit, tmp_path, ExportConfig(root2d="waypoints"))
    assert report.out.read_text() == before
    export(smplx_fit, tmp_path, ExportConfig(root2d="waypoints"), overwrite=True)
    assert report.out.read_text() != before
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".c.json.kinefit-export.json",  # the fingerprint record every export writes
        "c.json",
        "c.meta.json",
    ]
    with pytest.raises(KimodoError, match=r"no frames in the window \[5\.0, 6\.0\] s"):
        export(smplx_fit, tmp_path, ExportConfig(start=5.0, stop=6.0), name="w.json")
    with pytest.raises(KimodoError, match=r"has up axis 'up'; pass one of x, y, z, -x, -y, -z"):
        export(smplx_fit, tmp_path, ExportConfig(up_axis="up"), name="w.json")
    with pytest.raises(KimodoError, match=r"no individual 'mouse'; individuals: \['individual_0"):
        export(smplx_fit, tmp_path, ExportConfig(individual="mouse"), name="w.json")


def test_only_the_canonical_pose_is_read(smplx_fit, tmp_path):
    garbled = tmp_path / "garbled.zarr"
    shutil.copytree(smplx_fit, garbled)
    group = zarr.open_group(garbled, mode="r+")
    group["dof_value"][:] = np.nan
    group["fitted_position"][:] = np.nan
    config = ExportConfig(fullbody=FrameSpec((0, 9)), left_hand=FrameSpec((4,)))
    clean = export(smplx_fit, tmp_path, config, name="a.json")
    dirty = export(garbled, tmp_path, config, name="b.json")
    assert clean.out.read_text() == dirty.out.read_text()


def test_millimetre_fit_of_a_rescaled_plan_exports_in_metres(tmp_path):
    sk = load_kimodo_skeleton(SKELETONS, "smplx22")
    data = body_plan_to_dict(kimodo_body_plan(sk))
    for joint in data["joints"]:
        joint["offset_pos"] = [1000.0 * v for v in joint["offset_pos"]]
    plan_mm = load_body_plan(data)
    tracks = upright_tracks(plan_mm, 12, 30.0, np.random.default_rng(5), up_axis="z", unit="mm")
    fit = fit_store(plan_mm, tracks, tmp_path, "mm")
    report = export_kimodo(
        fit, SKELETONS, "smplx22", tmp_path / "c.json", ExportConfig(fullbody=FrameSpec((0, 11)))
    )
    assert report.motion.scale == 0.001 and np.nanmax(report.bound) < 1e-9
    fitted = open_fit(fit)["fitted_position"].isel(individual=0)
    mapped = report.motion.to_kimodo(fitted.transpose("time", "keypoint", "space").values)
    np.testing.assert_allclose(report.motion.positions, mapped, atol=1e-4)
    assert 0.8 < report.motion.root_positions[:, 1].min() < 1.2  # standing height in metres
    with pytest.raises(KimodoError, match=r"length unit 'body' .* pass the unit \(unit=\), one of"):
        export_kimodo(
            fit,
            SKELETONS,
            "smplx22",
            tmp_path / "d.json",
            ExportConfig(unit="body"),
            meta=tmp_path / "d",
        )


def test_name_map_errors_say_what_is_wrong():
    sk = load_kimodo_skeleton(SKELETONS, "somaskel30")
    plan = mannequin()
    with pytest.raises(
        KimodoError,
        match=r"fit\.zarr: the fitted body plan's joints are not the "
        r"Kimodo skeleton somaskel30's .* pass a name map \(name_map=\)",
    ):
        build_retarget(plan, sk, None, where="fit.zarr")
    with pytest.raises(KimodoError, match=r"\['elbo'\] are not joints of the body plan"):
        build_retarget(plan, sk, {"pelvis": "Hips", "elbo": "LeftForeArm"})
    with pytest.raises(KimodoError, match=r"\['Elbow'\] are not joints of somaskel30"):
        build_retarget(plan, sk, {"pelvis": "Hips", "elbow_l": "Elbow"})
    with pytest.raises(KimodoError, match=r"the Kimodo root 'Hips' must be mapped"):
        build_retarget(plan, sk, {"elbow_l": "LeftForeArm"})
    with pytest.raises(KimodoError, match=r"several plan joints map to \['LeftArm'\]"):
        build_retarget(plan, sk, {"pelvis": "Hips", "elbow_l": "LeftArm", "shoulder_l": "LeftArm"})
    with pytest.raises(
        KimodoError,
        match=r"'LeftForeArm' hangs below 'LeftArm' in somaskel30, "
        r"but 'shoulder_l' is not below 'elbow_l' in the body plan",
    ):
        build_retarget(
            plan, sk, {"pelvis": "Hips", "elbow_l": "LeftArm", "shoulder_l": "LeftForeArm"}
        )
