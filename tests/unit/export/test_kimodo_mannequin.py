"""Acceptance 2: a fitted mannequin exported onto somaskel30 through a name table, and back.

Tolerance. The exporter copies rotations, not positions: a Kimodo joint ``j`` mapped to
our joint ``m`` gets our world rotation times a constant rest alignment ``Q_j``, so every
Kimodo bone points where ours points and keeps its own length. A mapped joint ``D`` below
the mapped joint ``A`` then lands within ``|Q_A v_kimodo - v_mannequin|`` (the rest-pose
bone mismatch, i.e. the two skeletons' proportion difference) of where the fit put it,
plus whatever ``A`` was off by; the root is placed exactly. ``Retarget.bound`` sums these
mismatches from the root down (about 3 cm at the hips, 10 cm at the toes, 27 cm at the
thumb tips, whose offsets differ most). Positions must stay within that bound (+0.1 mm for
float32 storage); bone directions must match exactly wherever the alignment is exact (a
joint with one mapped child).
"""

import numpy as np
import pytest

from pipeline.bodyplan import mannequin
from pipeline.export.kimodo import (
    ExportConfig,
    FrameSpec,
    export_kimodo,
    keypoint_map,
    load_constraints,
    load_kimodo_skeleton,
    name_map,
)
from pipeline.fit import fit_session
from pipeline.solve import SolverConfig
from pipeline.store import write_tracks
from pipeline.store.fit import open_fit
from pipeline.tracks import read_tracks
from pipeline.tracks.mapping import UnmappedKeypointWarning
from tests.fixtures.kimodo_motion import fit_store, upright_tracks
from tests.fixtures.shared_data import KIMODO

SKELETONS = KIMODO / "skeletons.json"
TABLE = name_map("mannequin", "somaskel30")


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mannequin")
    plan = mannequin()
    tracks = upright_tracks(plan, 60, 30.0, np.random.default_rng(11), up_axis="z")
    fit = fit_store(plan, tracks, folder)
    config = ExportConfig(
        fullbody=FrameSpec(every=10), left_hand=FrameSpec((25,)), name_map=TABLE, text="walk"
    )
    report = export_kimodo(fit, SKELETONS, "somaskel30", folder / "constraints.json", config)
    return folder, fit, report


def test_export_passes_import_validation(session):
    _, _, report = session
    constraints = load_constraints(report.out, SKELETONS, "somaskel30")
    assert [e.type for e in constraints.entries] == ["root2d", "fullbody", "left-hand"]
    assert constraints.n_frames == report.motion.n_frames == 60  # from meta.json beside it
    ds = read_tracks(report.out, format="kimodo", skeleton_file=SKELETONS, skeleton="somaskel30")
    assert ds.sizes["time"] == 60


def test_keyframes_match_the_fitted_joints_within_the_proportion_bound(session):
    _, fit, report = session
    sk = load_kimodo_skeleton(SKELETONS, "somaskel30")
    fitted = open_fit(fit)["fitted_position"].isel(individual=0)
    ours = list(fitted["keypoint"].values)
    fitted = report.motion.to_kimodo(fitted.transpose("time", "keypoint", "space").values)
    frames = np.arange(0, 60, 10)
    bound = report.bound
    assert bound[0] == 0.0 and np.nanmax(bound) < 0.3
    assert all(bound[sk.index(j)] < 0.1 for j in ("LeftLeg", "LeftShin", "LeftFoot", "LeftToeBase"))
    for plan_joint, kimodo_joint in TABLE.items():
        j = sk.index(kimodo_joint)
        gap = report.motion.positions[frames, j] - fitted[frames, ours.index(plan_joint)]
        assert np.linalg.norm(gap, axis=1).max() <= bound[j] + 1e-4, kimodo_joint
    # bones with one mapped child are aligned exactly: directions agree
    for a_name, d_name in [
        ("shoulder_l", "elbow_l"),
        ("elbow_l", "wrist_l"),
        ("hip_r", "knee_r"),
        ("knee_r", "ankle_r"),
        ("ankle_l", "toe_l"),
        ("neck", "head"),
        ("spine", "chest"),
    ]:
        a, d = sk.index(TABLE[a_name]), sk.index(TABLE[d_name])
        theirs = report.motion.positions[frames, d] - report.motion.positions[frames, a]
        mine = fitted[frames, ours.index(d_name)] - fitted[frames, ours.index(a_name)]
        cos = (
            np.sum(theirs * mine, 1) / np.linalg.norm(theirs, axis=1) / np.linalg.norm(mine, axis=1)
        )
        assert np.arccos(np.clip(cos, -1, 1)).max() < 1e-3, (a_name, d_name)


def test_imported_targets_fit_back_onto_the_mannequin(session):
    folder, _, report = session
    ds = read_tracks(report.out, format="kimodo", skeleton_file=SKELETONS, skeleton="somaskel30")
    tracks = write_tracks(ds, folder / "imported.zarr")
    with pytest.warns(UnmappedKeypointWarning, match="Spine2"):
        fit_session(
            tracks,
            mannequin(),
            SolverConfig(),
            folder / "refit.zarr",
            keypoint_map=keypoint_map(TABLE),
        )
    refit = open_fit(folder / "refit.zarr")
    rms = refit["rms_error"].values[:, 0]
    keyframes = np.arange(0, 60, 10)
    assert np.all(np.isfinite(rms)) and np.median(rms[keyframes]) < 0.05
    weight = ds["confidence"].values[:, 0, 0]
    path_only = np.flatnonzero(weight < 1)
    pelvis = refit["fitted_position"].sel(keypoint="pelvis").values[:, :, 0]
    target = ds["position"].sel(keypoint="Hips").values[:, :, 0]
    planar = np.linalg.norm((pelvis - target)[path_only][:, [0, 2]], axis=1)
    assert path_only.size > 40 and planar.max() < 0.03
