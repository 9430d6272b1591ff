"""Keypoint maps proposed by name: DeepLabCut files' bodyparts, QuickIK's G1 names."""

from __future__ import annotations

import csv
import json
import warnings

import pytest

from pipeline.bodyplan import load_body_plan
from pipeline.bodyplan.keypoint_map import name_key, propose_keypoint_map
from pipeline.tracks.mapping import load_keypoint_map
from tests.fixtures.shared_data import SHARED

DLC = SHARED / "data" / "realdata" / "dlc"
MOUSE = [
    "nose",
    "ear_l",
    "ear_r",
    "neck",
    "spine_1",
    "spine_2",
    "spine_3",
    "spine_4",
    "tail_base",
    "tail_1",
    "tail_2",
    "tail_tip",
]


def _bodyparts(path) -> list[str]:
    with open(path, newline="") as fh:
        for row in csv.reader(fh):
            if row and row[0] == "bodyparts":
                return list(dict.fromkeys(c for c in row[1:] if c))
    raise AssertionError(f"{path}: no bodyparts row")


@pytest.mark.parametrize(
    ("file", "expected", "unmatched"),
    [
        (
            "CollectedData_Pranav.csv",
            {"snout": "nose", "leftear": "ear_l", "rightear": "ear_r", "tailbase": "tail_base"},
            [],
        ),
        (
            "mouse_single.csv",
            {
                "snout": "nose",
                "left_ear": "ear_l",
                "right_ear": "ear_r",
                "tailbase": "tail_base",
                "tail_end": "tail_tip",
            },
            ["centre", "lateral_left", "lateral_right"],
        ),
        (
            "mouse_multi.csv",
            {
                "snout": "nose",
                "leftear": "ear_l",
                "rightear": "ear_r",
                "spine1": "spine_1",
                "spine4": "spine_4",
                "tailbase": "tail_base",
                "tail1": "tail_1",
                "tailend": "tail_tip",
            },
            ["shoulder"],
        ),
    ],
)
def test_dlc_bodyparts_map_where_they_exist(file, expected, unmatched):
    names = _bodyparts(DLC / file)
    proposal = propose_keypoint_map(names, MOUSE)
    for k, v in expected.items():
        assert proposal.mapping[k] == v
    assert proposal.unmatched == unmatched
    assert set(proposal.mapping) | set(proposal.unmatched) == set(names)


def test_yaml_is_what_the_fit_reads(tmp_path):
    proposal = propose_keypoint_map(_bodyparts(DLC / "mouse_single.csv"), MOUSE)
    path = tmp_path / "map.yaml"
    path.write_text(proposal.to_yaml())
    assert "# unmatched track keypoints: centre, lateral_left, lateral_right" in proposal.to_yaml()
    assert load_keypoint_map(path) == proposal.mapping


def test_sides_synonyms_and_ambiguity():
    assert name_key("LeftHip") == name_key("hip_l") == name_key("L_Hip") == ("L", "hip")
    assert name_key("lhumerus", ["humerus"]) == ("L", "humerus")
    assert name_key("mixamorig:RightUpLeg") == ("R", "upleg")
    assert name_key("rear") == ("", "rear")
    proposal = propose_keypoint_map(["hip", "Knee"], ["hip_l", "hip_r", "knee"])
    assert proposal.ambiguous == {"hip": ["hip_l", "hip_r"]}
    assert proposal.mapping == {"Knee": "knee"} and proposal.unused_joints == ["hip_l", "hip_r"]
    two = propose_keypoint_map(["LeftEar", "ear_left"], ["ear_l"])
    assert two.mapping == {} and set(two.ambiguous) == {"LeftEar", "ear_left"}


def test_quickik_g1_names_find_the_imported_mjcf_bodies():
    pytest.importorskip("mujoco", reason="needs mujoco: pip install 'kinefit[mjcf]'")
    fixtures = json.loads((SHARED / "data" / "quickik-g1" / "fixtures_g1.json").read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = load_body_plan(SHARED / "data" / "models" / "mjcf" / "unitree_g1.nomesh.xml")
    proposal = propose_keypoint_map(fixtures["leg_joint_names"], plan)
    assert proposal.mapping["left_knee"] == "left_knee_link"
    assert proposal.mapping["waist_pitch"] == "torso_link"  # found by its DOF's name
    assert len(proposal.mapping) == 29
    assert proposal.unmatched == ["head", "left_hand", "right_hand"]  # no such bodies
