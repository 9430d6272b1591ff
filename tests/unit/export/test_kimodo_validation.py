"""Acceptance 3: every kind of bad constraints file gets one clear KimodoError."""

import copy
import json

import numpy as np
import pytest

from pipeline.export.kimodo import KimodoError, KimodoWarning, load_constraints
from pipeline.tracks import TracksError, read_tracks
from pipeline.tracks.reader_registry import pick_reader
from tests.fixtures.shared_data import KIMODO

SKELETONS = KIMODO / "skeletons.json"


def keyframe(kind: str, frames: list[int], n_joints: int = 30, **extra) -> dict:
    """An identity-pose entry; the root walks along +Z at 0.1 m per frame."""
    return {
        "type": kind,
        "frame_indices": frames,
        "local_joints_rot": [[[0.0, 0.0, 0.0]] * n_joints for _ in frames],
        "root_positions": [[0.0, 1.0, 0.1 * f] for f in frames],
        "smooth_root_2d": [[0.0, 0.1 * f] for f in frames],
        **extra,
    }


VALID = [
    {
        "type": "root2d",
        "frame_indices": [0, 30, 59],
        "smooth_root_2d": [[0.0, 0.0], [0.0, 3.0], [0.0, 5.9]],
        "global_root_heading": [[1.0, 0.0], [1.0, 0.0], [0.94, 0.34]],
    },
    keyframe("fullbody", [0, 45]),
    keyframe("left-hand", [20]),
    keyframe("end-effector", [10, 50], joint_names=["RightFoot", "Hips"]),
]


def load(tmp_path, data, name: str = "c.json", skeleton: str = "somaskel30", n_frames=60):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return load_constraints(path, SKELETONS, skeleton, n_frames=n_frames)


def changed(index: int, **fields) -> list:
    data = copy.deepcopy(VALID)
    data[index].update(fields)
    return data


def test_the_valid_file_loads(tmp_path):
    constraints = load(tmp_path, VALID)
    assert [e.type for e in constraints.entries] == [e["type"] for e in VALID]
    assert constraints.entries[3].ee_names == ("RightFoot", "Hips")
    assert constraints.n_frames == 60


BAD = {
    "unknown type": (
        changed(3, type="end-effectors"),
        r"c\.json: entry 3 \(end-effectors\): type: 'end-effectors' is not one of root2d, "
        r"fullbody, .*end-effector \(did you mean 'end-effector'\?\)",
    ),
    "wrong root shape": (
        changed(1, root_positions=[[0.0, 1.0], [0.0, 1.0]]),
        r"c\.json: entry 1 \(fullbody\): root_positions: expected shape \[2, 3\], got \[2, 2\]",
    ),
    "rows not matching frames": (
        changed(2, smooth_root_2d=[[0.0, 2.0], [0.0, 2.0]]),
        r"entry 2 \(left-hand\): smooth_root_2d: expected shape \[1, \?\], got \[2, 2\]",
    ),
    "ragged rotations": (
        changed(2, local_joints_rot=[[[0.0, 0.0, 0.0]] * 29 + [[0.0, 0.0]]]),
        r"entry 2 \(left-hand\): local_joints_rot: expected a nested list of shape \[1, \?, 3\]",
    ),
    "numbers as strings": (
        changed(0, smooth_root_2d=[[0.0, 0.0], ["0", 3.0], [0.0, 5.9]]),
        r"entry 0 \(root2d\): smooth_root_2d: expected numbers only",
    ),
    "wrong joint count": (
        changed(1, local_joints_rot=[[[0.0, 0.0, 0.0]] * 25] * 2),
        r"entry 1 \(fullbody\): local_joints_rot: wrong joint count: 25 joints, skeleton "
        r"somaskel30 has 30 or 77",
    ),
    "unknown joint_names": (
        changed(3, joint_names=["RightFoot", "Head"]),
        r"entry 3 \(end-effector\): joint_names: unknown \['Head'\]; valid: LeftHand, "
        r"RightHand, LeftFoot, RightFoot, Hips",
    ),
    "missing joint_names": (
        [keyframe("end-effector", [3])],
        r"entry 0 \(end-effector\): joint_names: expected a non-empty list",
    ),
    "frame past the clip": (
        changed(0, frame_indices=[0, 30, 60]),
        r"entry 0 \(root2d\): frame_indices: frame 60 is outside the clip \[0, 60\)",
    ),
    "negative frame": (
        changed(2, frame_indices=[-1]),
        r"entry 2 \(left-hand\): frame_indices: frame -1 is outside the clip",
    ),
    "float frame": (
        changed(2, frame_indices=[20.0]),
        r"entry 2 \(left-hand\): frame_indices: expected integers, got 20\.0",
    ),
    "duplicated frame, other values": (
        changed(
            0,
            frame_indices=[0, 30, 30],
            smooth_root_2d=[[0.0, 0.0], [0.0, 3.0], [0.5, 3.0]],
            global_root_heading=[[1.0, 0.0]] * 3,
        ),
        r"entry 0 \(root2d\): smooth_root_2d: frame 30 is listed twice \(positions 1 and 2\) "
        r"with different values",
    ),
    "two entries disagree on a frame": (
        VALID + [keyframe("right-hand", [45], root_positions=[[0.0, 0.9, 4.5]])],
        r"entry 4 \(right-hand\): local_joints_rot \(Hips position\): frame 45 conflicts with "
        r"entry 1 \(fullbody\) \(values differ by 0\.1 m\); Kimodo would keep one",
    ),
    "root path and keyframe headings disagree": (
        changed(0, global_root_heading=[[0.0, 1.0], [1.0, 0.0], [0.94, 0.34]]),
        r"entry 1 \(fullbody\): local_joints_rot \(heading\): frame 0 conflicts with entry 0 "
        r"\(root2d\) \(values differ by 1\.57 rad\)",
    ),
    "NaN": (
        changed(1, root_positions=[[0.0, 1.0, 0.0], [0.0, float("nan"), 4.5]]),
        r"entry 1 \(fullbody\): root_positions: non-finite number \(NaN or infinity\) at "
        r"index \[1, 1\]",
    ),
    "infinity": (
        changed(0, global_root_heading=[[1.0, 0.0], [float("inf"), 0.0], [0.94, 0.34]]),
        r"entry 0 \(root2d\): global_root_heading: non-finite number",
    ),
    "3-column smooth_root_2d": (
        changed(2, smooth_root_2d=[[0.0, 1.0, 2.0]]),
        r"entry 2 \(left-hand\): smooth_root_2d: has 3 columns; write 2 columns \(x, z\): "
        r"Kimodo would read \(x, y\) from 3",
    ),
    "zero heading": (
        changed(0, global_root_heading=[[1.0, 0.0], [0.0, 0.0], [0.94, 0.34]]),
        r"entry 0 \(root2d\): global_root_heading: \(0, 0\) at frame 30 has no angle",
    ),
    "missing rotations": (
        [{k: v for k, v in keyframe("fullbody", [1]).items() if k != "local_joints_rot"}],
        r"entry 0 \(fullbody\): local_joints_rot: missing required field",
    ),
    "no frames": (changed(2, frame_indices=[]), r"entry 2 \(left-hand\): frame_indices: expected"),
    "not an object": (VALID + [[1, 2]], r"c\.json: entry 4: expected a JSON object, got list"),
    "not an array": ({"type": "root2d"}, r"c\.json: expected a JSON array of constraint objects"),
    "not JSON": ("[{,]", r"c\.json: not valid JSON: .* at line 1 column 3"),
    "repeated key": (
        '[{"type": "root2d", "type": "fullbody"}]',
        r"c\.json: not valid JSON: key 'type' appears twice in one object",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_file_raises_one_clear_error(tmp_path, case):
    data, message = BAD[case]
    with pytest.raises(KimodoError, match=message):
        load(tmp_path, data)


def test_wrong_joint_count_for_other_skeletons(tmp_path):
    with pytest.raises(
        KimodoError, match=r"wrong joint count: 30 joints, skeleton g1skel34 has 34$"
    ):
        load(tmp_path, [keyframe("fullbody", [0])], skeleton="g1skel34")
    with pytest.raises(KimodoError, match=r"skeleton smplx22 has 22$"):
        load(tmp_path, [keyframe("left-foot", [0], n_joints=77)], skeleton="smplx22")


def test_clip_length_comes_from_meta_json_beside_the_file(tmp_path):
    (tmp_path / "meta.json").write_text(json.dumps({"texts": ["a", "b"], "durations": [1.0, 0.5]}))
    with pytest.raises(KimodoError, match=r"frame 59 is outside the clip \[0, 45\)"):
        load(tmp_path, VALID, n_frames=None)
    (tmp_path / "meta.json").write_text(json.dumps({"texts": ["a"], "durations": [1.0, 2.0]}))
    with pytest.raises(KimodoError, match=r"meta\.json: texts, durations: 1 texts for 2 durations"):
        load(tmp_path, VALID, n_frames=None)


def test_equal_duplicates_are_merged_and_unknown_keys_warned(tmp_path):
    data = changed(2, frame_indices=[20, 20], colour="red")
    data[2]["local_joints_rot"] *= 2
    data[2]["root_positions"] *= 2
    data[2]["smooth_root_2d"] *= 2
    with pytest.warns(KimodoWarning, match=r"entry 2 \(left-hand\): keys \['colour'\] are ignored"):
        constraints = load(tmp_path, data)
    assert constraints.entries[2].frames.tolist() == [20]


def test_soma_accepts_30_and_77_joints_by_name(tmp_path, rng):
    rot77 = rng.normal(scale=0.3, size=(1, 77, 3))
    entry = keyframe("fullbody", [5], n_joints=77, local_joints_rot=rot77.tolist())
    constraints = load(tmp_path, [entry])
    names77 = json.loads(SKELETONS.read_text())["somaskel77"]["joint_names"]
    names30 = constraints.skeleton.joint_names
    expected = rot77[:, [names77.index(n) for n in names30]]
    np.testing.assert_array_equal(constraints.entries[0].local_rot, expected)
    wide = load(tmp_path, [keyframe("fullbody", [5])], skeleton="somaskel77")
    assert wide.entries[0].local_rot.shape == (1, 77, 3)


def test_reader_registry_sniffs_the_file_and_requires_the_skeleton(tmp_path):
    path = tmp_path / "constraints.json"
    path.write_text(json.dumps(VALID, indent=1))
    assert pick_reader(path).FORMAT == "kimodo"
    (tmp_path / "other.json").write_text('{"joints": []}')
    with pytest.raises(TracksError, match="cannot tell the tracks format"):
        pick_reader(tmp_path / "other.json")
    with pytest.raises(TracksError, match=r"needs skeleton_file= and skeleton="):
        read_tracks(path)
    with pytest.raises(TracksError, match=r"has no option\(s\) \['colour'\]; valid options"):
        read_tracks(path, skeleton_file=SKELETONS, skeleton="somaskel30", colour=1)
    with pytest.warns(UserWarning, match="the file records 30 fps; ignoring fps=25"):
        ds = read_tracks(path, fps=25, skeleton_file=SKELETONS, skeleton="somaskel30")
    assert ds.attrs["fps"] == 30.0
    ds = read_tracks(path, skeleton_file=SKELETONS, skeleton="somaskel30", n_frames=60)
    assert ds.sizes["time"] == 60 and ds.attrs["kimodo_skeleton"] == "somaskel30"
