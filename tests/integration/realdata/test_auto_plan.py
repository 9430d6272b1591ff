"""``kinefit ingest`` + ``kinefit fit -b auto`` on real files of the shipped conventions.

Each file of the table is ingested (a few frames, ``--frames``; ``--fps`` only where the
format records no rate) and fitted with ``-b auto`` and no other option. The chosen plan
must be the intended one, its map cover at least 80 % of the file's keypoints, and the
median keypoint error be within 2x of the reference: the same frames fitted with a map
written here by hand and the plan calibrated to the subject (``kinefit calibrate``: for
3D markers through their positions, for one 2D view ``--single-view``, segment scales
through the image plane at the estimated image scale; a file of several individuals is
calibrated on its first). On a session of one individual ``-b auto`` calibrates the
chosen plan to the subject before the fit; a BVH file is fitted with its own skeleton.
Files of no shipped convention are refused, each for the reason in ``REFUSED``.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from flows.cli import app
from pipeline.archive.summary import session_rms, stop_reason_counts
from tests.fixtures.shared_data import ROOT, SHARED

REAL = SHARED / "data" / "realdata"
runner = CliRunner()
FRAMES = "0:20"
#: files whose first frames hold no animal (SLEAP's plus-maze mouse enters at frame 165)
FRAMES_OF = {"sleap/SLEAP_single-mouse_EPM.analysis.h5": "165:185"}

#: file -> (fps to give or None, intended plan, hand-made map: track keypoint -> joint)
TABLE = {
    "dlc/mouse_multi.csv": (
        30,
        "mouse_topdown",
        {
            "snout": "nose",
            "leftear": "ear_l",
            "rightear": "ear_r",
            "shoulder": "back",
            "spine1": "spine1",
            "spine2": "center",
            "spine3": "spine3",
            "spine4": "spine4",
            "tailbase": "tail_base",
            "tail1": "tail1",
            "tail2": "tail2",
            "tailend": "tail_end",
        },
    ),
    "nwb/m3v1mp4DLC_resnet50_openfieldAug20shuffle1_30000.nwb": (
        None,
        "mouse_topdown",
        {
            "ind1_snout": "nose",
            "ind1_leftear": "ear_l",
            "ind1_rightear": "ear_r",
            "ind1_tailbase": "tail_base",
        },
    ),
    # DeepLabCut's labelled frames (Pranav's four-point mouse) and SLEAP's elevated plus maze
    "dlc/CollectedData_Pranav.csv": (
        30,
        "mouse_topdown",
        {"snout": "nose", "leftear": "ear_l", "rightear": "ear_r", "tailbase": "tail_base"},
    ),
    "sleap/SLEAP_single-mouse_EPM.analysis.h5": (
        30,
        "mouse_topdown",
        {
            "snout": "nose",
            "left_ear": "ear_l",
            "right_ear": "ear_r",
            "centre": "center",
            "tail_base": "tail_base",
            "tail_end": "tail_end",
        },
    ),
    "sleap/predictions.analysis.h5": (
        30,
        "fly_topdown",
        {
            "head": "head",
            "thorax": "thorax",
            "abdomen": "abdomen",
            "wingL": "wing_l",
            "wingR": "wing_r",
            "forelegL4": "foreleg_tip_l",
            "forelegR4": "foreleg_tip_r",
            "midlegL4": "midleg_tip_l",
            "midlegR4": "midleg_tip_r",
            "hindlegL4": "hindleg_tip_l",
            "hindlegR4": "hindleg_tip_r",
            "eyeL": "eye_l",
            "eyeR": "eye_r",
        },
    ),
    "sleap/minimal_back_proofread.analysis.h5": (
        30,
        "mouse_topdown",
        {
            "Nose": "nose",
            "Ear_R": "ear_r",
            "Ear_L": "ear_l",
            "TTI": "tail_base",
            "TailTip": "tail_end",
            "Head": "head",
            "Trunk": "center",
            "Tail_1": "tail1",
            "Tail_2": "tail2",
            "Shoulder_left": "shoulder_l",
            "Shoulder_right": "shoulder_r",
            "Haunch_left": "hip_l",
            "Haunch_right": "hip_r",
            "Neck": "neck",
        },
    ),
    # LightningPose's mirror-mouse paws (the side view's four paws: paw1LH left hind ...)
    "lightningpose/180607_004.train_frames=75.rng=0.top.csv": (
        30,
        "rodent_side",
        {
            "paw1LH": "hindpaw_l",
            "paw2LF": "forepaw_l",
            "paw3RF": "forepaw_r",
            "paw4RH": "hindpaw_r",
        },
    ),
}

#: Files outside ``unclaimed/`` that -b auto refuses: no shipped convention has 4 of their
#: keypoints (their names against every plan's names and aliases).
REFUSED = {
    # paw_l, paw_r: two keypoints, fewer than any body's pose needs
    "lightningpose/3f859b5c-e73a-4044-b49e-34bb81e96715.left.rng=0.csv": 30,
    # IBL's mouse face (eye_top_l, whisker_pad_l_top, nostril_l, tongue_tip, ...): no
    # shipped face plan; only ear_tip_l and nose_tip match the top-view mouse (2 of 12)
    "lightningpose/lp_mouse_single.csv": 30,
    # Anipose's paw tutorial: three points on one paw (l-base, l-edge, l-middle; r-* are
    # empty): no shipped paw plan
    "anipose/mouse_paw.csv": 30,
    # the mirror-mouse labels hold two views of one body in one image (paw1LH_top ...
    # nose_top and paw1LH_bot ... nose_bot, plus obstacle points obs_top, obsHigh_bot,
    # obsLow_bot): one single-view fit cannot fit two projections at once; map one view's
    # seven keypoints by hand onto rodent_side
    "lightningpose/CollectedData.csv": 30,
}


def _ok(result) -> str:
    assert result.exit_code == 0, result.output
    return result.output


def _ingest(tmp: Path, rel: str, fps: int | None) -> Path:
    out = tmp / "tracks.zarr"
    args = ["ingest", str(REAL / rel), "-o", str(out), "--frames", FRAMES_OF.get(rel, FRAMES)]
    _ok(runner.invoke(app, args + ([] if fps is None else ["--fps", str(fps)])))
    return out


def _individuals(tracks: Path) -> list[str]:
    from pipeline.store import open_tracks

    return [str(i) for i in open_tracks(tracks)["individual"].values]


@pytest.mark.parametrize("rel", list(TABLE))
def test_auto_plan_fits_like_a_hand_made_map_and_a_calibrated_plan(tmp_path, rel):
    fps, plan, hand = TABLE[rel]
    tracks = _ingest(tmp_path, rel, fps)
    output = _ok(
        runner.invoke(
            app,
            ["fit", str(tracks), "-o", str(tmp_path / "a.zarr"), "-b", "auto", "--workers", "0"],
        )
    )
    assert f"body plan {plan} chosen" in output
    mapped = int(output.split("keypoints mapped")[0].split(":")[-1].split(" of ")[0])
    assert mapped >= 0.8 * (len(hand) + (rel.startswith("sleap/minimal")))  # Tail_0
    auto = session_rms(tmp_path / "a.zarr")
    map_file = tmp_path / "hand.yaml"
    map_file.write_text(yaml.safe_dump({"keypoints": hand}))
    cal = tmp_path / "subject.json"
    calibrate = ["calibrate", str(tracks), "-b", plan, "-o", str(cal), "--single-view"]
    calibrate += ["--keypoint-map", str(map_file), "--frames", "20", "--min-frames", "1"]
    output = _ok(runner.invoke(app, [*calibrate, "--individual", _individuals(tracks)[0]]))
    assert "through one view at image scale" in output
    fit = ["fit", str(tracks), "-o", str(tmp_path / "h.zarr"), "--calibration", str(cal)]
    _ok(runner.invoke(app, [*fit, "--keypoint-map", str(map_file), "--workers", "0"]))
    reference = session_rms(tmp_path / "h.zarr")
    assert auto is not None and reference is not None
    assert auto <= 2.0 * reference, (auto, reference)


@pytest.mark.parametrize("rel", list(REFUSED))
def test_files_of_no_shipped_convention_are_refused(tmp_path, rel):
    tracks = _ingest(tmp_path, rel, REFUSED[rel])
    fit = ["fit", str(tracks), "-o", str(tmp_path / "f.zarr"), "-b", "auto", "--workers", "0"]
    result = runner.invoke(app, fit)
    assert result.exit_code == 1, result.output
    assert "no body plan matches" in result.output and "best candidates: " in result.output
    assert not (tmp_path / "f.zarr").exists()


BVH_WALK_MAP = ROOT / "configs" / "keypoint_maps" / "bvh_walk_to_mannequin.yaml"


@pytest.mark.parametrize(
    "name", ["AV_8Walk_Meredith_HVHA_Rep1.bvh", "test_freebvh.bvh", "test_mocapbank.bvh"]
)
def test_a_bvh_file_is_fitted_with_its_own_skeleton(tmp_path, name):
    tracks = tmp_path / "t.zarr"
    walk = name.startswith("AV_")  # the walk is in inches (PROVENANCE): fitted in metres
    units = ["-O", "unit=in", "--to-unit", "m"] if walk else []
    ingest = ["ingest", str(REAL / "bvh" / name), "-o", str(tracks), "--frames", FRAMES]
    _ok(runner.invoke(app, [*ingest, *units]))
    fit = ["fit", str(tracks), "-o", str(tmp_path / "a.zarr"), "-b", "auto", "--workers", "0"]
    output = _ok(runner.invoke(app, fit))
    n = len(_keypoints(tracks))
    assert f"body plan {name} chosen as the file's own skeleton (BVH): {n} of {n}" in output
    auto = session_rms(tmp_path / "a.zarr")
    assert auto is not None and np.isfinite(auto)
    if not walk:  # no hand-made map onto a shipped plan for these rigs
        return
    cal = tmp_path / "subject.json"
    calibrate = ["calibrate", str(tracks), "-b", "mannequin", "-o", str(cal)]
    _ok(runner.invoke(app, [*calibrate, "--keypoint-map", str(BVH_WALK_MAP), "--min-frames", "10"]))
    ref = ["fit", str(tracks), "-o", str(tmp_path / "c.zarr"), "--calibration", str(cal)]
    _ok(runner.invoke(app, [*ref, "--keypoint-map", str(BVH_WALK_MAP), "--workers", "0"]))
    reference = session_rms(tmp_path / "c.zarr")
    assert reference is not None and auto <= 2.0 * reference, (auto, reference)


def _keypoints(tracks: Path) -> list[str]:
    from pipeline.store import open_tracks

    return [str(k) for k in open_tracks(tracks)["keypoint"].values]


PIG_HAND = {
    **{m: m for s in "LR" for m in (f"{s}FHD", f"{s}BHD", f"{s}SHO", f"{s}ELB", f"{s}WRA")},
    **{m: m for s in "LR" for m in (f"{s}WRB", f"{s}FIN", f"{s}ASI", f"{s}PSI", f"{s}THI")},
    **{m: m for s in "LR" for m in (f"{s}KNE", f"{s}TIB", f"{s}ANK")},
    **{"C7": "C7", "T10": "T10", "CLAV": "CLAV", "STRN": "STRN", "RBAK": "RBAK"},
    **{"LHEE": "heel_l", "RHEE": "heel_r", "LTOE": "toe_l", "RTOE": "toe_r"},
}


def test_plugin_gait_c3d_fits_within_2x_of_the_calibrated_plan(tmp_path):
    tracks = tmp_path / "static.zarr"
    _ok(
        runner.invoke(
            app,
            ["ingest", str(REAL / "c3d/Sample_Static.c3d"), "-o", str(tracks), "--frames", "0:20"],
        )
    )
    output = _ok(
        runner.invoke(
            app,
            ["fit", str(tracks), "-o", str(tmp_path / "a.zarr"), "-b", "auto", "--workers", "0"],
        )
    )
    assert "body plan plugin_gait chosen by keypoint names: 111 of 115" in output
    assert "calibrated to " in output
    auto = session_rms(tmp_path / "a.zarr")
    map_file = tmp_path / "hand.yaml"
    map_file.write_text(yaml.safe_dump({"keypoints": PIG_HAND}))
    cal = tmp_path / "subject.json"
    calibrate = ["calibrate", str(tracks), "-b", "plugin_gait", "-o", str(cal)]
    _ok(
        runner.invoke(
            app,
            [*calibrate, "--keypoint-map", str(map_file), "--frames", "20", "--min-frames", "10"],
        )
    )
    fit = ["fit", str(tracks), "-o", str(tmp_path / "c.zarr"), "--calibration", str(cal)]
    _ok(runner.invoke(app, [*fit, "--keypoint-map", str(map_file), "--workers", "0"]))
    reference = session_rms(tmp_path / "c.zarr")
    assert auto is not None and reference is not None
    assert auto <= 2.0 * reference, (auto, reference)


@pytest.mark.parametrize("rel", ["c3d/Vicon.c3d", "c3d/Qualisys.c3d", "c3d/BTS.c3d"])
def test_other_mocap_files_are_refused_with_candidates(tmp_path, rel):
    tracks = tmp_path / "t.zarr"
    _ok(runner.invoke(app, ["ingest", str(REAL / rel), "-o", str(tracks), "--frames", "0:5"]))
    result = runner.invoke(app, ["fit", str(tracks), "-o", str(tmp_path / "f.zarr"), "-b", "auto"])
    assert result.exit_code == 1
    assert "no body plan matches" in result.output and "best candidates: " in result.output
    assert not (tmp_path / "f.zarr").exists()


def test_unconfident_session_warns_and_reports_no_observations(tmp_path):
    tracks = _ingest(tmp_path, "dlc/mouse_single.csv", 30)
    fit = ["fit", str(tracks), "-o", str(tmp_path / "a.zarr"), "-b", "auto", "--workers", "0"]
    output = _ok(runner.invoke(app, fit))
    share = float(re.search(r"only ([0-9.]+) ?%", output).group(1))  # the confidence warning
    assert share < 5.0 and "keypoint observations are confident" in output
    strict = ["fit", str(tracks), "-o", str(tmp_path / "b.zarr"), "-b", "auto", "--workers", "0"]
    output = _ok(runner.invoke(app, [*strict, "--set", "solver.min_confidence=0.5"]))
    assert "no frame has an observed keypoint" in output and "0 px" not in output
    counts = stop_reason_counts(tmp_path / "b.zarr")
    assert counts["no_observations"] == 11 and counts["max_iterations"] == 0
    assert session_rms(tmp_path / "b.zarr") is None
    assert np.isfinite(session_rms(tmp_path / "a.zarr"))


@pytest.mark.parametrize(
    ("rel", "expected"),
    [
        (
            "nwb/m3v1mp4DLC_resnet50_openfieldAug20shuffle1_30000.nwb",
            [
                "ind1_snout: nose",
                "ind1_leftear: ear_l",
                "ind1_rightear: ear_r",
                "ind1_tailbase: tail_base",
            ],
        ),
        (
            "sleap/minimal_back_proofread.analysis.h5",
            ["Head: head", "Trunk: center", "TTI: tail_base"],
        ),
        ("sleap/predictions.analysis.h5", ["head: head", "thorax: thorax", "abdomen: abdomen"]),
    ],
)
def test_body_plan_map_without_a_plan(rel, expected):
    output = _ok(runner.invoke(app, ["body-plan", "map", str(REAL / rel)]))
    assert "chose body plan" in output
    for line in expected:
        assert f"  {line}\n" in output


def test_body_plan_map_refuses_a_weak_map_and_list_shows_the_plans():
    rel = "dlc/mouse_single.csv"
    result = runner.invoke(app, ["body-plan", "map", str(REAL / rel), "mannequin"])
    assert result.exit_code == 1 and "too weak to fit" in result.output
    listed = _ok(runner.invoke(app, ["body-plan", "list"]))
    for name in ("mouse_topdown", "fly_topdown", "human_pose", "plugin_gait", "quadruped"):
        assert f"{name}: " in listed
