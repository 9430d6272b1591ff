"""The shipped plans: real trees that validate, and chosen by the keypoint names of real files."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pipeline.bodyplan import load_body_plan, propose_keypoint_map, resolve_body_plan
from pipeline.bodyplan.keypoint_map import strip_prefixes
from pipeline.bodyplan.library import SHIPPED, shipped_plan, shipped_plan_dict
from pipeline.bodyplan.library.choice import PlanMatch, check_map, choose_plan, rank_plans
from pipeline.errors import BodyPlanError, TracksError
from pipeline.kinematics import forward_kinematics
from pipeline.tracks import read_tracks
from pipeline.tracks.pose_skeletons import SKELETONS
from tests.fixtures.shared_data import SHARED

REAL = SHARED / "data" / "realdata"


def _names(rel: str) -> list[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [str(k) for k in read_tracks(REAL / rel, fps=30.0)["keypoint"].values]


@pytest.mark.parametrize("name", list(SHIPPED))
def test_shipped_plan_validates_without_unobservable_dofs(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an unobservable DOF warns on load
        plan = load_body_plan(shipped_plan_dict(name), source=name)
    assert plan.version == 2 and plan.unit and plan.n_dofs > 0
    assert (plan.extras or {}).get("x-up-axis") in ("y", "z")
    assert resolve_body_plan(name) == plan
    spec = plan.calibration or {}
    assert name == "mannequin" or spec.get("markers"), "markers as offsets are declared"
    assert all(plan.joint_names.index(m) >= 0 for m in spec.get("markers", []))


@pytest.mark.parametrize("name", [n for n in SHIPPED if n != "mannequin"])
def test_left_and_right_mirror_at_rest(name):
    plan = shipped_plan(name)
    lateral = 0 if (plan.extras or {})["x-up-axis"] == "y" else 1
    rest = np.asarray(forward_kinematics(plan, np.zeros((1, plan.n_dofs)))[0])
    names = plan.joint_names
    for i, joint in enumerate(names):
        if joint.endswith("_l"):
            j = names.index(joint[:-2] + "_r")
            mirrored = rest[i].copy()
            mirrored[lateral] *= -1
            np.testing.assert_allclose(rest[j], mirrored, atol=1e-9, err_msg=joint)


def test_unknown_shipped_name_lists_the_choices():
    with pytest.raises(BodyPlanError, match="shipped: mouse_topdown, fly_topdown"):
        shipped_plan("horse")


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["ind1_snout", "ind1_leftear"], ["snout", "leftear"]),
        (["Daphnee:LASI", "Daphnee:RASI"], ["LASI", "RASI"]),
        (["paw_l", "paw_r"], ["paw_l", "paw_r"]),  # a shared word is not a prefix
        (["mouse2-nose", "tail"], ["nose", "tail"]),
    ],
)
def test_prefixes_are_stripped(names, expected):
    assert list(strip_prefixes(names).values()) == expected


#: file -> (intended plan, track keypoint -> joint for the keypoints named in the issue)
TABLE = {
    "nwb/m3v1mp4DLC_resnet50_openfieldAug20shuffle1_30000.nwb": (
        "mouse_topdown",
        {
            "ind1_snout": "nose",
            "ind1_leftear": "ear_l",
            "ind1_rightear": "ear_r",
            "ind1_tailbase": "tail_base",
        },
    ),
    "sleap/minimal_back_proofread.analysis.h5": (
        "mouse_topdown",
        {"Head": "head", "Trunk": "center", "TTI": "tail_base", "Neck": "neck"},
    ),
    "sleap/predictions.analysis.h5": (
        "fly_topdown",
        {"head": "head", "thorax": "thorax", "abdomen": "abdomen", "forelegL4": "foreleg_tip_l"},
    ),
    "dlc/mouse_single.csv": ("mouse_topdown", {"centre": "center", "lateral_left": "lateral_l"}),
    "dlc/mouse_multi.csv": ("mouse_topdown", {"shoulder": "back", "tailend": "tail_end"}),
    "dlc/CollectedData_Pranav.csv": ("mouse_topdown", {"snout": "nose"}),
    "dlc/m3v1mp4DLC_resnet50_openfieldAug20shuffle1_30000.h5": ("mouse_topdown", {}),
    "movement/m3v1mp4DLC_openfield.movement-0.15.nc": ("mouse_topdown", {}),
    "sleap/SLEAP_single-mouse_EPM.analysis.h5": ("mouse_topdown", {"tail_base": "tail_base"}),
    "c3d/Sample_Static.c3d": ("plugin_gait", {"LASI": "LASI", "LHEE": "heel_l", "LFEO": "LFEO"}),
}


@pytest.mark.parametrize("rel", list(TABLE))
def test_auto_choice_of_real_files(rel):
    plan, expected = TABLE[rel]
    names = _names(rel)
    match = choose_plan(names, rel)
    assert match.name == plan
    assert {k: match.proposal.mapping[k] for k in expected} == expected
    assert match.coverage >= 0.8


@pytest.mark.parametrize("rel", ["c3d/Qualisys.c3d", "c3d/BTS.c3d", "c3d/Vicon.c3d"])
def test_other_mocap_marker_sets_are_refused_with_candidates(rel):
    with pytest.raises(TracksError, match=r"best candidates: \w+ \(\d+/\d+ keypoints; unmatched"):
        choose_plan(_names(rel), rel)


@pytest.mark.parametrize("skeleton", list(SKELETONS))
def test_human_pose_skeletons_choose_human_pose(skeleton):
    match = choose_plan(list(SKELETONS[skeleton]), skeleton)
    assert match.name == "human_pose" and match.coverage == 1.0


def test_an_empty_or_weak_map_is_an_error_naming_what_did_not_match():
    names = _names("dlc/mouse_single.csv")
    plan = shipped_plan("mannequin")
    match = PlanMatch("mannequin", plan, propose_keypoint_map(names, plan), len(names))
    with pytest.raises(TracksError, match="unmatched: left_ear, right_ear.*too weak to fit"):
        check_map(match, "mouse_single.csv")


Q = [1.0, 0.0, 0.0, 0.0]


def test_given_plans_rank_beside_the_shipped_ones():
    names = ["beak", "wing_tip_l", "wing_tip_r", "tail_base"]
    bird = load_body_plan(
        {
            "fixed_base": False,
            "joints": [
                {
                    "name": "body",
                    "parent": None,
                    "offset_pos": [0, 0, 0],
                    "offset_quat": Q,
                    "dofs": [],
                },
                {
                    "name": "beak",
                    "parent": "body",
                    "offset_pos": [1, 0, 0],
                    "offset_quat": Q,
                    "dofs": [],
                },
                {
                    "name": "wing_l",
                    "parent": "body",
                    "offset_pos": [0, 1, 0],
                    "offset_quat": Q,
                    "dofs": [],
                },
                {
                    "name": "wing_r",
                    "parent": "body",
                    "offset_pos": [0, -1, 0],
                    "offset_quat": Q,
                    "dofs": [],
                },
                {
                    "name": "tail_base",
                    "parent": "body",
                    "offset_pos": [-1, 0, 0],
                    "offset_quat": Q,
                    "dofs": [],
                },
            ],
            "x-keypoint-aliases": {"wing_l": ["wing_tip_l"], "wing_r": ["wing_tip_r"]},
            "x-unit": "m",
        },
        source="bird.json",
    )
    ranked = rank_plans(names, {"bird.json": bird})
    assert ranked[0].name == "bird.json" and ranked[0].n_mapped == 4


@pytest.mark.parametrize(
    "rel",
    [
        "sleap/SLEAP_three-mice_Aeon_mixed-labels.analysis.h5",  # one centroid
        "nwb/0.3.0_poseestimation_one_camera.nwb",  # two paws
        "lightningpose/CollectedData.csv",  # a mirror rig's two views of a mouse
        "anipose/mouse_paw.csv",
    ],
)
def test_too_few_or_foreign_keypoints_are_refused(rel):
    with pytest.raises(TracksError, match="no body plan matches"):
        choose_plan(_names(rel), rel)


def test_a_tie_goes_to_the_smaller_plan_listed_first():
    match = choose_plan(_names("bvh/test_mocapbank.bvh"), "mocapbank")
    assert match.name == "mannequin"  # plugin_gait holds the same skeleton and its markers
