"""The shared BVH parser against bvhio on every BVH file of the shared data.

bvhio (its own BVH reader) gives each joint's name, parent, ``OFFSET``, ``CHANNELS`` and
``End Site`` offset, the frame count and time, and per frame the joint's local position
(its position channels, or its ``OFFSET`` when it has none) and local rotation as a
quaternion. The parser's channel values must give the same: the rotation channels
composed in file order (intrinsic, scipy's upper-case Euler sequence, ``R = R1 R2 R3``).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from pipeline.bodyplan import BodyPlanError
from pipeline.bodyplan.importers.bvh import import_bvh
from pipeline.formats import bvh_parse
from pipeline.tracks import TracksError
from pipeline.tracks.readers import bvh as reader
from tests.fixtures.shared_data import SHARED

bvhio = pytest.importorskip("bvhio")

FILES = sorted((SHARED / "data" / "realdata" / "bvh").glob("*.bvh")) + sorted(
    (SHARED / "data" / "models" / "bvh").glob("*.bvh")
)


def _parse(path):
    text = bvh_parse.read_text(path, ValueError)
    joints = bvh_parse.hierarchy(text, ValueError)
    return joints, bvh_parse.motion(text, sum(len(j.channels) for j in joints), ValueError)


def test_the_shared_data_has_the_bvh_files():
    assert len(FILES) >= 4, FILES


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_hierarchy_and_motion_equal_bvhio(path):
    joints, motion = _parse(path)
    theirs = bvhio.readAsBvh(str(path))
    layout = [entry[0] for entry in theirs.Root.layout()]
    ours = [j for j in joints if not j.end_site]
    assert [j.name for j in ours] == [j.Name for j in layout]
    parent_of = {id(c): p.Name for p in layout for c in p.Children}
    for joint, their in zip(ours, layout, strict=True):
        parent = None if joint.parent is None else joints[joint.parent].name
        assert parent == parent_of.get(id(their))
        assert list(joint.channels) == list(their.Channels)
        np.testing.assert_allclose(joint.offset, list(their.Offset), rtol=1e-6, atol=1e-5)
    by_name = {j.Name: j for j in layout}
    ends = [j for j in joints if j.end_site]
    assert ends  # every file has End Sites
    for end in ends:
        their = by_name[joints[end.parent].name]
        np.testing.assert_allclose(end.offset, list(their.EndSite), rtol=1e-6, atol=1e-5)
    assert motion.values.shape == (theirs.FrameCount, sum(len(j.channels) for j in ours))
    assert motion.frame_time == pytest.approx(theirs.FrameTime, rel=1e-6)
    frames = np.unique(np.linspace(0, theirs.FrameCount - 1, 25).astype(int))
    column = 0
    for joint, their in zip(ours, layout, strict=True):
        values = motion.values[:, column : column + len(joint.channels)]
        column += len(joint.channels)
        position = np.tile(np.asarray(joint.offset, dtype=np.float64), (len(frames), 1))
        rotations = [(c[0], k) for k, c in enumerate(joint.channels) if c.endswith("rotation")]
        for k, channel in enumerate(joint.channels):
            if channel.endswith("position"):
                position[:, "XYZ".index(channel[0])] = values[frames, k]
        if rotations:
            sequence = "".join(axis for axis, _ in rotations)
            angles = values[np.ix_(frames, [k for _, k in rotations])]
            matrix = Rotation.from_euler(sequence, angles, degrees=True).as_matrix()
        else:
            matrix = np.tile(np.eye(3), (len(frames), 1, 1))
        keys = [their.Keyframes[int(f)] for f in frames]
        got_position = np.array([list(key.Position) for key in keys])
        wxyz = np.array(
            [[key.Rotation.w, key.Rotation.x, key.Rotation.y, key.Rotation.z] for key in keys]
        )
        got_matrix = Rotation.from_quat(wxyz[:, [1, 2, 3, 0]]).as_matrix()
        scale = max(1.0, float(np.abs(position).max()))
        np.testing.assert_allclose(got_position, position, atol=1e-5 * scale, err_msg=joint.name)
        np.testing.assert_allclose(got_matrix, matrix, atol=1e-5, err_msg=joint.name)


BROKEN = """HIERARCHY
ROOT hip
{
  OFFSET 0 0 0
  CHANNELS 3 Xposition Yposition Zposition
  JOINT knee
  {
    OFFSET 0 -1 zero
    CHANNELS 0
  }
}
MOTION
Frames: 1
Frame Time: 0.1
0 0 0
"""


def test_one_malformed_line_is_named_in_each_kinds_error(tmp_path):
    path = tmp_path / "broken.bvh"
    path.write_text(BROKEN)
    with pytest.raises(TracksError, match=r"broken\.bvh: line 8: OFFSET of 'knee': 'zero' is not"):
        reader.read(path)
    with pytest.raises(BodyPlanError, match=r"broken\.bvh: line 8: OFFSET of 'knee': 'zero' is"):
        import_bvh(path)
    path.write_text(BROKEN.replace("-1 zero", "-1 0").replace("\n0 0 0\n", "\n0 x 0\n"))
    with pytest.raises(TracksError, match=r"line 15: 'x' is not a number in the MOTION data"):
        reader.read(path)
