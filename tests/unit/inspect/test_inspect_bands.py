"""Uncertainty bands do not set the angle plots' y-axis: the trajectories do.

A real fit through the real solver (the mannequin, a synthetic session, ``temporal="none"``):
its standard deviations are a few degrees, and its bands sit inside the axes untouched.
Then a few frames' ``dof_std`` of the left elbow are set to 400 deg, as near-singular
geometry gives: the elbow's axis still follows its trajectory, the band is clipped to it,
and the clipping is marked (edge markers, a note, a legend entry) in the figure and in
the viewer.
"""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.lines import Line2D
from matplotlib.text import Text

from pipeline.bodyplan import mannequin
from pipeline.fit import fit_session
from pipeline.inspect import figure_png, plot_angle_trajectories
from pipeline.inspect.data.angle_panels import CLIP_LABEL
from pipeline.inspect.data.angle_sets import with_named_angles
from pipeline.inspect.data.bands import BAND_FLOOR_DEG
from pipeline.inspect.plots.angle_trajectories import CLIP_GID
from pipeline.inspect.viewer.encoding import decode
from pipeline.inspect.viewer.figure import viewer_figure, viewer_spec
from pipeline.solve import SolverConfig
from pipeline.store import write_tracks
from pipeline.store.fit import open_fit
from pipeline.synth import SynthConfig, synthesize

WIDE = slice(20, 25)  # the frames whose elbow SD is blown up
JOINTS = ["elbow_l", "knee_r", "wrist_l"]


@pytest.fixture(scope="module")
def modest(tmp_path_factory):
    root = tmp_path_factory.mktemp("bands")
    plan = mannequin()
    config = SynthConfig(n_frames=60, fps=50.0, noise=0.003)
    tracks = synthesize(plan, config, np.random.default_rng(4), session="bands").tracks
    path = write_tracks(tracks, root / "t.zarr", chunk_frames=60)
    fit_session(path, plan, SolverConfig(temporal="none"), root / "f.zarr")
    return open_fit(root / "f.zarr").load()


@pytest.fixture(scope="module")
def wide(modest):
    std = modest["dof_std"].copy()
    std.loc[{"dof": "elbow_l/0", "time": modest["time"][WIDE]}] = np.radians(400.0)
    return modest.assign(dof_std=std)


def panels(fig):
    return {ax.get_title().split(" ")[0]: ax for ax in fig.axes if ax.get_visible()}


def band_extent(ax):
    (band,) = [c for c in ax.collections if isinstance(c, PolyCollection)]
    y = np.concatenate([p.vertices[:, 1] for p in band.get_paths()])
    return float(y.min()), float(y.max())


def cues(ax):
    return [a for a in [*ax.lines, *ax.texts] if a.get_gid() == CLIP_GID]


def legend_labels(fig):
    return [text.get_text() for legend in fig.legends for text in legend.get_texts()]


def test_modest_bands_sit_inside_the_axes_unclipped(modest, tmp_path):
    sd = np.degrees(modest["dof_std"].values)
    assert np.nanmax(sd) < 20  # a well-conditioned fit: a few degrees
    fig = plot_angle_trajectories(modest, joints=JOINTS, ncols=3)
    named = with_named_angles(modest)
    for joint, ax in panels(fig).items():
        angle = {"elbow_l": "flexion", "knee_r": "flexion", "wrist_l": "flexion"}[joint]
        y = named["joint_angle"].sel(individual="individual_0", angle=f"{joint}/{angle}").values
        s = named["joint_angle_std"].sel(individual="individual_0", angle=f"{joint}/{angle}")
        low, high = ax.get_ylim()
        assert low < np.min(y - s.values) and np.max(y + s.values) < high, joint
        assert cues(ax) == [], joint
    # the elbow's band is drawn whole: y -+ sd, not clipped
    elbow = panels(fig)["elbow_l"]
    y = elbow.lines[0].get_ydata()
    s = named["joint_angle_std"].sel(individual="individual_0", angle="elbow_l/flexion").values
    np.testing.assert_allclose(band_extent(elbow), (np.min(y - s), np.max(y + s)), rtol=1e-6)
    assert CLIP_LABEL not in legend_labels(fig) and "±1 SD" in legend_labels(fig)
    (tmp_path / "modest.png").write_bytes(figure_png(fig))
    spec = viewer_spec(modest, joint="elbow_l", max_frames=10)
    assert not [d for d in spec["data"] if d["meta"].get("kinefit") == "angle_std_clipped"]


def test_a_huge_band_is_clipped_to_the_trajectorys_axis_and_marked(wide, tmp_path):
    fig = plot_angle_trajectories(wide, joints=JOINTS, ncols=3)
    (tmp_path / "wide.png").write_bytes(figure_png(fig))
    by_joint = panels(fig)
    elbow = by_joint["elbow_l"]
    y = elbow.lines[0].get_ydata()
    span = max(np.ptp(y), BAND_FLOOR_DEG)
    low, high = elbow.get_ylim()
    # the axis follows the trajectory: it holds it, and reaches past it by about its range
    # (the band's reach), never by the 400 deg band; the top has the legend's headroom
    assert low < y.min() and high > y.max()
    assert low > y.min() - 1.2 * span and high < y.max() + 2.2 * span
    assert high - low < 100
    # the band is clipped to the axis, at the elbow's frames of 400 deg
    b_low, b_high = band_extent(elbow)
    assert low <= b_low and b_high <= high
    markers = [a for a in cues(elbow) if isinstance(a, Line2D)]
    t = wide["time"].values[WIDE]
    assert {m.get_marker() for m in markers} == {"^", "v"}  # past both edges
    for m in markers:
        np.testing.assert_allclose(m.get_xdata(), t)
        assert m.get_ydata()[0] == pytest.approx(b_low if m.get_marker() == "v" else b_high)
    (note,) = [a for a in cues(elbow) if isinstance(a, Text)]
    assert note.get_text() == "±1 SD clipped (SD up to 400 deg)"
    assert CLIP_LABEL in legend_labels(fig)
    # the other panels' modest bands: unclipped, unmarked
    assert cues(by_joint["knee_r"]) == [] and cues(by_joint["wrist_l"]) == []


def test_the_viewer_ranges_the_angle_axis_by_the_trajectories(wide, modest):
    spec = viewer_spec(wide, joint="elbow_l", max_frames=10)
    axis = spec["layout"]["yaxis"]
    assert axis["autorange"] is False
    low, high = axis["range"]
    line = next(
        d
        for d in spec["data"]
        if d["meta"].get("kinefit") == "angle" and d["meta"]["angle"] == "elbow_l/flexion"
    )
    y = decode(line["y"])
    assert low < y.min() and high > y.max() and high - low < 100
    band = next(
        d
        for d in spec["data"]
        if d["meta"].get("kinefit") == "angle_std" and d["meta"]["angle"] == "elbow_l/flexion"
    )
    assert np.nanmin(decode(band["y"])) >= low and np.nanmax(decode(band["y"])) <= high
    (clipped,) = [d for d in spec["data"] if d["meta"].get("kinefit") == "angle_std_clipped"]
    assert clipped["visible"] and clipped["meta"]["angle"] == "elbow_l/flexion"
    assert clipped["name"].endswith(f"{CLIP_LABEL} (SD up to 400 deg)")
    t = wide["time"].values[WIDE]
    np.testing.assert_allclose(decode(clipped["x"]), np.r_[t, t])  # above and below
    np.testing.assert_allclose(decode(clipped["y"]), [high] * 5 + [low] * 5)
    # the joint menu sets each joint's range; the knee's is its own, as in the modest fit
    menu = {b["label"]: b["args"][1] for b in spec["layout"]["updatemenus"][1]["buttons"]}
    assert menu["elbow_l"]["yaxis.range"] == [low, high]
    calm = viewer_spec(modest, joint="elbow_l", max_frames=10)
    calm_menu = {b["label"]: b["args"][1] for b in calm["layout"]["updatemenus"][1]["buttons"]}
    assert menu["knee_r"]["yaxis.range"] == calm_menu["knee_r"]["yaxis.range"]
    viewer_figure(wide, joint="elbow_l", max_frames=10)  # plotly accepts it
