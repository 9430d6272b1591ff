"""Gaps in the angle plots: frames where no keypoint constrained an angle, shaded.

Real fits through the real solver (``temporal="smooth"``): a synthetic mannequin session
whose left arm loses its keypoints for 20 frames, and the Unitree G1, whose ankle rolls
move no keypoint in any frame.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from matplotlib.patches import Rectangle

from pipeline.bodyplan import load_body_plan, mannequin
from pipeline.fit import fit_session
from pipeline.inspect import figure_png, plot_angle_trajectories
from pipeline.inspect.data.angle_panels import GAP_LABEL, gap_spans, panel_gaps
from pipeline.inspect.data.angle_sets import angle_set, evidence_gaps, gap_runs, with_named_angles
from pipeline.inspect.viewer.figure import viewer_figure, viewer_spec
from pipeline.solve import SolverConfig
from pipeline.store import write_tracks
from pipeline.store.fit import open_fit
from pipeline.synth import SynthConfig, synthesize

FPS = 50.0
GAP = (50, 70)  # frames 50..69 of 120
#: The left arm's keypoints below the shoulder: every DOF of the shoulder, elbow and
#: wrist hangs above them only.
ARM = ["elbow_l", "wrist_l", "hand_l", "thumb_l"]
ARM_JOINTS = ("shoulder_l", "elbow_l", "wrist_l")


@pytest.fixture(scope="module")
def arm_gap(tmp_path_factory):
    """The mannequin fitted with the left arm's keypoints missing in frames ``GAP``."""
    root = tmp_path_factory.mktemp("gaps")
    plan = mannequin()
    config = SynthConfig(n_frames=120, fps=FPS, noise=0.003)
    tracks = synthesize(plan, config, np.random.default_rng(4), session="arm_gap").tracks
    position = tracks["position"].copy()
    position.loc[{"keypoint": ARM, "time": tracks["time"][GAP[0] : GAP[1]]}] = np.nan
    path = write_tracks(tracks.assign(position=position), root / "t.zarr", chunk_frames=120)
    fit_session(path, plan, SolverConfig(temporal="smooth"), root / "f.zarr")
    return open_fit(root / "f.zarr")


@pytest.fixture(scope="module")
def g1_fit(tmp_path_factory, quickik_dir):
    root = tmp_path_factory.mktemp("g1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the plan warns of its two unobservable DOFs
        plan = load_body_plan(quickik_dir.parent / "quickik-g1" / "g1_body_plan.json")
        tracks = synthesize(plan, SynthConfig(n_frames=40, fps=FPS), np.random.default_rng(2))
        path = write_tracks(tracks.tracks, root / "t.zarr", chunk_frames=40)
        fit_session(path, plan, SolverConfig(temporal="smooth"), root / "f.zarr")
    return open_fit(root / "f.zarr")


def runs_by_angle(fit):
    angles = angle_set(fit)
    gaps = evidence_gaps(fit, angles, "individual_0")
    return {name: gap_runs(gaps[:, a]) for a, name in enumerate(angles.names)}


def in_arm(name: str) -> bool:
    return name.split("/")[0] in ARM_JOINTS


def test_the_gap_is_exactly_the_missing_frames_of_the_arms_dofs(arm_gap):
    runs = runs_by_angle(arm_gap)  # no joint_angle: the DOF values, under DOF names
    assert sum(map(in_arm, runs)) == 6  # shoulder ball (3), elbow hinge, wrist (2)
    for dof, found in runs.items():
        assert found == ([GAP] if in_arm(dof) else []), dof
    # named angles: the shoulder's Euler angles come from all three of its DOFs
    named = runs_by_angle(with_named_angles(arm_gap))
    assert {"shoulder_l/flexion", "elbow_l/flexion", "wrist_l/radial_deviation"} <= set(named)
    for angle, found in named.items():
        assert found == ([GAP] if in_arm(angle) else []), angle


def test_without_dof_observable_the_missing_keypoints_give_the_gap(arm_gap):
    older = arm_gap.drop_vars("dof_observable")  # as a fit store of schema 1 or 2
    for dof, found in runs_by_angle(older).items():
        assert found == ([GAP] if in_arm(dof) else []), dof


def test_an_euler_angle_is_in_a_gap_where_any_of_its_dofs_is(arm_gap):
    fit = with_named_angles(arm_gap).load()
    blind = fit["dof_observable"].copy()
    blind.loc[{"dof": "shoulder_l/twist", "time": fit["time"][10:13]}] = False
    runs = runs_by_angle(fit.assign(dof_observable=blind))
    for angle in ("shoulder_l/flexion", "shoulder_l/abduction", "shoulder_l/horizontal_flexion"):
        assert runs[angle] == [(10, 13), GAP], angle
    assert runs["elbow_l/flexion"] == [GAP]


def spans_of(ax) -> list[tuple[float, float]]:
    return [
        (round(p.get_x(), 9), round(p.get_x() + p.get_width(), 9))
        for p in ax.patches
        if isinstance(p, Rectangle)
    ]


def test_the_angle_figure_shades_the_gap_behind_the_arms_panels(arm_gap, tmp_path):
    fig = plot_angle_trajectories(arm_gap)
    t = arm_gap["time"].values
    # half a frame either side of the gap's first and last frames
    want = [(round((t[49] + t[50]) / 2, 9), round((t[69] + t[70]) / 2, 9))]
    panels = {ax.get_title().split(" ")[0]: ax for ax in fig.axes if ax.get_visible()}
    assert set(ARM_JOINTS) <= set(panels) and len(panels) == 15
    for joint, ax in panels.items():
        assert spans_of(ax) == (want if joint in ARM_JOINTS else []), joint
        for patch in ax.patches:  # behind the trajectories and their bands
            assert patch.get_zorder() < min(line.get_zorder() for line in ax.lines)
    labels = [text.get_text() for legend in fig.legends for text in legend.get_texts()]
    assert labels.count(GAP_LABEL) == 1 and "±1 SD" in labels
    (tmp_path / "angles.png").write_bytes(figure_png(fig))
    # a window without the gap: nothing shaded, no legend entry
    quiet = plot_angle_trajectories(arm_gap, time=(0.0, 0.9), joints=["elbow_l"])
    assert spans_of(quiet.axes[0]) == []
    assert GAP_LABEL not in [x.get_text() for x in quiet.legends[0].get_texts()]


def test_the_viewer_shades_the_gap_of_the_joint_shown_and_its_menu_swaps_them(arm_gap):
    spec = viewer_spec(arm_gap, joint="elbow_l", max_frames=30)
    t = arm_gap["time"].values
    (shape,) = spec["layout"]["shapes"]
    assert shape["yref"] == "y domain" and shape["layer"] == "below"
    np.testing.assert_allclose(
        [shape["x0"], shape["x1"]], [(t[49] + t[50]) / 2, (t[69] + t[70]) / 2]
    )
    assert shape["name"] == GAP_LABEL and shape["showlegend"]
    menu = {b["label"]: b["args"][1]["shapes"] for b in spec["layout"]["updatemenus"][1]["buttons"]}
    assert all(len(menu[j]) == 1 for j in ARM_JOINTS)
    assert all(not shapes for j, shapes in menu.items() if j not in ARM_JOINTS)
    viewer_figure(arm_gap.isel(time=slice(40, 80)), joint="wrist_l")  # plotly accepts it


def test_a_dof_never_observed_is_marked_not_shaded(g1_fit):
    roll = "left_ankle_roll"
    assert not g1_fit["dof_observable"].sel(dof=f"{roll}_joint").any()
    fig = plot_angle_trajectories(g1_fit, joints=[roll, "left_ankle_pitch"])
    blind, seen = fig.axes[:2]
    assert blind.get_title().endswith("never observed") and spans_of(blind) == []
    assert [x.get_text() for x in blind.get_legend().get_texts()] == [
        f"{roll}_joint (never observed)"
    ]
    assert "never" not in seen.get_title() + seen.get_legend().get_texts()[0].get_text()
    spec = viewer_spec(g1_fit, joint=roll, max_frames=10)
    lines = [t for t in spec["data"] if t.get("meta", {}).get("kinefit") == "angle"]
    names = {t["meta"]["angle"]: t["name"] for t in lines}
    assert names[f"{roll}/{roll}_joint"].endswith("(never observed)")
    assert not names["left_ankle_pitch/left_ankle_pitch_joint"].endswith("(never observed)")
    assert spec["layout"]["shapes"] == []


def test_runs_spans_and_panels_from_masks():
    mask = np.zeros(12, bool)
    mask[[0, 1, 5, 11]] = True
    assert gap_runs(mask) == [(0, 2), (5, 6), (11, 12)]
    assert gap_runs(np.zeros(4, bool)) == [] and gap_runs(np.ones(3, bool)) == [(0, 3)]
    t = np.arange(12) * 0.1
    spans = gap_spans(t, mask)  # clipped to the time range at both ends
    np.testing.assert_allclose(spans, [(0.0, 0.15), (0.45, 0.55), (1.05, 1.1)])
    many = np.zeros(1000, bool)
    many[::3] = True  # 334 one-frame runs: coarsened to blocks
    coarse = gap_spans(np.arange(1000.0), many, max_spans=50)
    assert len(coarse) <= 50
    covered = np.zeros(1000, bool)
    for x0, x1 in coarse:
        covered[int(np.ceil(x0)) : int(np.floor(x1)) + 1] = True
    assert covered[many].all()
    # a panel: one individual's angle never observed is left out of the shading
    a = np.zeros((6, 2), bool)
    a[2:4, 0] = True
    b = np.ones((6, 2), bool)
    b[:, 0] = False
    shade, never = panel_gaps({"i0": a, "i1": b, "i2": None}, [0, 1])
    assert gap_runs(shade) == [(2, 4)] and never == {1: ["i1"]}
