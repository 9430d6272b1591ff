"""BVH import: the skeleton driven by the file's channels equals the tracks reader's positions.

The importer and the reader share the BVH text parser (:mod:`pipeline.formats.bvh_parse`,
checked against bvhio in ``tests/unit/formats``); the plan's positions come from kinefit's
forward kinematics, the reader's from its own BVH forward kinematics.
"""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.bodyplan import BodyPlanError
from pipeline.bodyplan.engine_config import from_engine_configuration, to_engine_configuration
from pipeline.bodyplan.importers import plan_unit
from pipeline.bodyplan.importers.bvh import import_bvh, read_bvh_motion
from pipeline.kinematics import forward_kinematics
from pipeline.tracks.readers import bvh as reader

from .models import BVH, BVH_FILES


@pytest.mark.parametrize("rotations", ["ball", "euler"])
@pytest.mark.parametrize("translation", ["add", "replace"])
@pytest.mark.parametrize("path", BVH_FILES, ids=lambda p: p.name)
def test_channels_drive_the_reader_positions(path, rotations, translation):
    plan = import_bvh(path, rotations=rotations, translation=translation)
    ds = reader.read(path, fps=30.0, translation=translation)
    motion, frame_time = read_bvh_motion(path)
    assert len(motion) == ds.sizes["time"]
    step = max(1, len(motion) // 200)
    motion = motion[::step]
    expected = ds["position"].values[::step, :, :, 0].transpose(0, 2, 1)  # (T, keypoint, 3)
    names = [str(k) for k in ds["keypoint"].values]
    assert set(names) <= set(plan.joint_names)
    pose = from_engine_configuration(plan, motion)
    pos = forward_kinematics(plan, pose.dof_values, pose.root_position, pose.root_orientation)
    idx = [plan.joint_index(n) for n in names]
    scale = float(np.abs(expected).max())
    np.testing.assert_allclose(pos[:, idx], expected, atol=1e-12 * scale)
    back = to_engine_configuration(plan, *pose)
    again = from_engine_configuration(plan, back)
    pos2 = forward_kinematics(plan, again.dof_values, again.root_position, again.root_orientation)
    np.testing.assert_allclose(pos2, pos, atol=1e-12 * scale)


def test_kinds_and_source():
    plan = import_bvh(BVH / "cmu_01_01.bvh")
    assert not plan.fixed_base and plan.version == 2
    kinds = {j.kind.kind for j in plan.joints if j.kind is not None}
    assert kinds == {"ball"}
    assert "LThumb_end" in plan.joint_names  # End Site keypoint, the reader's name
    assert plan_unit(plan) == "unknown"
    euler = import_bvh(BVH / "cmu_01_01.bvh", rotations="euler", unit="in")
    assert euler.version == 1 and plan_unit(euler) == "in"
    assert "LeftUpLeg/Zrotation" in euler.dof_names


def test_bad_bvh_names_line(tmp_path):
    text = (BVH / "cmu_01_01.bvh").read_text()
    cut = tmp_path / "cut.bvh"
    cut.write_text(text[:600])
    with pytest.raises(BodyPlanError, match=r"cut\.bvh: line \d+: the HIERARCHY ends early"):
        import_bvh(cut)
    bad = tmp_path / "bad.bvh"
    bad.write_text(
        text.replace("CHANNELS 3 Zrotation Yrotation Xrotation", "CHANNELS 3 Zrot Y X", 1)
    )
    with pytest.raises(BodyPlanError, match=r"bad\.bvh: line \d+: joint '\w+': channels"):
        import_bvh(bad)
    with pytest.raises(BodyPlanError, match="rotations='quat' is not one of ball, euler"):
        import_bvh(BVH / "cmu_01_01.bvh", rotations="quat")
