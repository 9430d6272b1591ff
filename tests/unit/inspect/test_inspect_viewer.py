"""The interactive viewer: its data read back from the figure equals the fit store's."""

import json

import numpy as np
import plotly.graph_objects as go
import pytest
import xarray as xr

from pipeline.errors import InspectError
from pipeline.inspect import view, viewer_figure
from pipeline.inspect.data.playback import (
    MAX_VIEWER_FRAMES,
    large_residual_threshold,
    skeleton_paths,
    viewer_frames,
)
from pipeline.inspect.viewer.encoding import decode
from pipeline.inspect.viewer.figure import SPEEDS, viewer_spec
from pipeline.store.fit import open_fit


def traces_of(spec, kind, individual=None):
    return [
        k
        for k, t in enumerate(spec["data"])
        if t.get("meta", {}).get("kinefit") == kind
        and (individual is None or t["meta"].get("individual") == individual)
    ]


def frame_points(spec, frame, trace):
    """(N, 3) points of a 3D trace at a frame (by frame index), read back from the spec."""
    f = next(f for f in spec["frames"] if f["name"] == str(frame))
    data = f["data"][trace]  # a frame updates every trace, in order
    return np.stack([decode(data[a]) for a in "xyz"], axis=1)


@pytest.fixture(scope="module")
def walk_spec(walk):
    from pipeline.inspect import open_observed

    return viewer_spec(walk, open_observed(walk), keep_frames=[123])


def test_skeleton_at_every_frame_is_the_fitted_position(walk, walk_spec):
    spec = walk_spec
    names = [str(k) for k in walk["keypoint"].values]
    assert set(spec["layout"]["meta"]["kinefit_viewer"]["frames"]) == set(range(200))
    for ind in ("individual_0", "individual_1"):
        (trace,) = traces_of(spec, "skeleton", ind)
        joints = spec["data"][trace]["meta"]["joints"]
        for frame in (0, 57, 123, 199):
            got = frame_points(spec, frame, trace)
            want = walk["fitted_position"].sel(individual=ind).isel(time=frame)
            want = want.transpose("keypoint", "space").values
            breaks = np.array([j == "" for j in joints])  # NaN between polylines
            assert breaks.sum() >= 4  # the mannequin's limbs start new polylines
            assert np.isnan(got[breaks]).all()
            line = np.array([want[names.index(j)] for j in joints if j])
            np.testing.assert_array_equal(got[~breaks], line.astype(np.float32))
            assert set(joints) - {""} == set(names)  # every joint is drawn


def test_observed_and_highlights_follow_the_fit(walk, walk_spec):
    from pipeline.inspect import open_observed

    spec = walk_spec
    observed = open_observed(walk)
    ind = "individual_0"
    (obs,) = traces_of(spec, "observed", ind)
    (missing,) = traces_of(spec, "missing", ind)
    (large,) = traces_of(spec, "large", ind)
    (limit,) = traces_of(spec, "limit", ind)
    residual = walk["residual"].sel(individual=ind).values
    threshold = float(spec["data"][large]["name"].split("> ")[1].split()[0])
    assert threshold > 0
    names = [str(k) for k in walk["keypoint"].values]
    seen_missing = seen_large = seen_limit = 0
    for frame in range(0, 200, 7):
        want = observed.sel(individual=ind).isel(time=frame).transpose("keypoint", "space")
        np.testing.assert_array_equal(frame_points(spec, frame, obs), want.values)
        f = next(f for f in spec["frames"] if f["name"] == str(frame))
        text = {t: f["data"][t]["text"] for t in (missing, large, limit)}
        assert text[missing] == [n for k, n in enumerate(names) if np.isnan(residual[frame, k])]
        big = [n for k, n in enumerate(names) if residual[frame, k] > threshold * (1 + 1e-3)]
        assert set(big) <= set(text[large])
        active = walk["limit_active"].sel(individual=ind).isel(time=frame).values
        joints = {d.split("/")[0] for d, a in zip(walk["dof"].values, active, strict=True) if a}
        assert set(text[limit]) == joints
        seen_missing += len(text[missing])
        seen_large += len(text[large])
        seen_limit += len(text[limit])
    assert seen_missing and seen_large and seen_limit  # the walk has all three


def test_time_cursor_moves_with_the_frame(walk, walk_spec):
    spec = walk_spec
    cursors = traces_of(spec, "cursor")
    assert len(cursors) == 2
    t = walk["time"].values
    for f in spec["frames"][::40]:
        for c in cursors:
            data = f["data"][c]
            assert data["x"] == [float(t[int(f["name"])])] * 2
    slider = spec["layout"]["sliders"][0]
    assert [s["args"][0] for s in slider["steps"]] == [[f["name"]] for f in spec["frames"]]
    labels = [b["label"] for b in spec["layout"]["updatemenus"][0]["buttons"]]
    assert len(labels) == len(SPEEDS) + 1 and labels[-1].endswith("pause")


def test_every_frame_updates_every_trace_so_transitions_keep_the_2d_panels(walk_spec):
    # plotly.js redraws, during an animated transition (write_html's auto-play), only the
    # traces a frame updates and drops the others from their subplots; the browser test
    # (tests/integration/browser/test_viewer_browser.py) shows the panels drawn
    spec = walk_spec
    kinds = [t["meta"]["kinefit"] for t in spec["data"]]
    still = {k for k, kind in enumerate(kinds) if kind == "rms" or kind.startswith("angle")}
    assert len(still) > 20 and {kinds[k] for k in still} >= {"angle", "angle_std", "rms"}
    for f in spec["frames"]:
        assert "traces" not in f and len(f["data"]) == len(spec["data"])
        for k, (trace, data) in enumerate(zip(spec["data"], f["data"], strict=True)):
            assert data == {} if k in still else data["type"] == trace["type"]


def test_long_sessions_are_decimated_with_the_rule_on_the_figure(walk):
    frames, step = viewer_frames(10_000, MAX_VIEWER_FRAMES, keep=[7, 9_999, 20_000])
    assert step == 34 and frames[0] == 0 and 7 in frames and 9_999 in frames
    assert len(frames) == len(range(0, 10_000, 34)) + 2
    spec = viewer_spec(walk, max_frames=50, keep_frames=[101])
    kept = spec["layout"]["meta"]["kinefit_viewer"]["frames"]
    assert kept == sorted({*range(0, 200, 4), 101})
    note = spec["layout"]["title"]["subtitle"]["text"]
    assert "every 4th of 200 frames" in note and "plus the worst frames" in note
    assert [f["name"] for f in spec["frames"]] == [str(k) for k in kept]


def test_angle_panel_names_units_and_joint_menu(walk, walk_spec):
    from pipeline.bodyplan.angles import joint_angles
    from pipeline.inspect.data.checks import body_plan_of

    spec = walk_spec
    angles = [spec["data"][k] for k in traces_of(spec, "angle")]
    named = joint_angles(walk, body_plan_of(walk))  # the exports' named angles, in deg
    assert {t["meta"]["angle"] for t in angles} == set(map(str, named["angle"].values))
    for name in ("knee_l/flexion", "hip_r/adduction"):
        trace = next(t for t in angles if t["meta"]["angle"] == name)
        assert trace["name"].endswith("(deg)")
        want = named.sel(individual=trace["meta"]["individual"], angle=name).values
        np.testing.assert_allclose(decode(trace["y"]), want, rtol=1e-6, atol=1e-4)
    knee = named.sel(angle="knee_l/flexion", individual="individual_0").values
    dof = np.degrees(walk["dof_value"].sel(dof="knee_l/0", individual="individual_0").values)
    np.testing.assert_allclose(knee, dof)  # a hinge's flexion is its DOF
    menu = spec["layout"]["updatemenus"][1]
    assert [b["label"] for b in menu["buttons"]][:2] == ["spine", "chest"]
    chest = menu["buttons"][1]["args"][0]["visible"]
    shown = {
        t["meta"]["angle"]
        for t, v in zip(spec["data"], chest, strict=True)
        if v and t.get("meta", {}).get("kinefit") == "angle"
    }
    assert shown == {"chest/flexion", "chest/left_bending", "chest/left_rotation"}
    # SD bands exactly when the fit has dof_std (fit store schema 3 has it)
    assert bool(traces_of(spec, "angle_std")) == ("dof_std" in walk.data_vars)
    # without a body plan: the DOF values under their DOF names
    bare = viewer_spec(walk.isel(time=slice(0, 20)).assign_attrs(body_plan=""))
    names = {bare["data"][k]["meta"]["angle"] for k in traces_of(bare, "angle")}
    assert names == set(map(str, walk["dof"].values))


def test_uncertainty_bands_and_named_angles_when_the_fit_has_them(walk):
    small = walk.isel(time=slice(0, 40)).load()
    std = xr.full_like(small["dof_value"], 0.05).rename("dof_std")
    spec = viewer_spec(small.assign(dof_std=std))
    bands = [spec["data"][k] for k in traces_of(spec, "angle_std")]
    assert len(bands) == len(traces_of(spec, "angle"))
    band = next(b for b in bands if b["meta"]["angle"] == "knee_r/flexion")
    y = decode(band["y"])
    mid = np.degrees(small["dof_value"].sel(individual=band["meta"]["individual"], dof="knee_r/0"))
    np.testing.assert_allclose(y[:40] - mid.values, np.degrees(0.05), rtol=1e-4)
    euler = next(b for b in bands if b["meta"]["angle"] == "hip_r/flexion")
    assert np.isnan(decode(euler["y"])).all()  # Euler angles have no SD from dof_std
    # the exports issue's joint_angle (time, individual, angle), here in degrees
    named = xr.DataArray(
        np.degrees(small["dof_value"].isel(dof=[11, 12]).values),
        dims=("time", "individual", "angle"),
        coords={"angle": ["elbow_l/flexion", "wrist_l/flexion"]},
        attrs={"units": "deg"},
    )
    spec = viewer_spec(small.assign(joint_angle=named))
    got = {spec["data"][k]["meta"]["angle"] for k in traces_of(spec, "angle")}
    assert got == {"elbow_l/flexion", "wrist_l/flexion"}
    menu = [b["label"] for b in spec["layout"]["updatemenus"][1]["buttons"]]
    assert menu == ["elbow_l", "wrist_l"]


def test_view_returns_a_plotly_figure_that_serializes(walk):
    fig = view(walk.isel(time=slice(0, 30)), joint="knee_l")
    assert isinstance(fig, go.Figure) and len(fig.frames) == 30
    assert fig.layout.template.layout.to_plotly_json() == {}
    data = json.loads(fig.to_json())
    assert data["frames"][0]["name"] == "0"
    assert {len(f["data"]) for f in data["frames"]} == {len(data["data"])}  # every trace
    assert "knee_l/flexion" in {t.get("meta", {}).get("angle") for t in data["data"]}


def test_skeleton_paths_draw_each_bone_once(walk):
    from pipeline.bodyplan import mannequin

    plan = mannequin()
    names = list(plan.joint_names)
    paths = skeleton_paths(plan, names)
    segments = [
        tuple(sorted((int(a), int(b))))
        for a, b in zip(paths[:-1], paths[1:], strict=True)
        if a >= 0 and b >= 0
    ]
    parents = plan.parent_indices
    want = {tuple(sorted((int(parents[j]), j))) for j in range(len(names)) if parents[j] >= 0}
    assert set(segments) == want and len(segments) == len(want)  # each bone exactly once
    assert len(skeleton_paths(None, names)) == 0


def test_large_residual_threshold_rule():
    fitted = np.zeros((2, 3, 3))
    fitted[:, 1, 1] = 2.0  # a body 2 long: 1 % is 0.02
    residual = np.array([[0.001, 0.002, np.nan], [0.003, 0.5, 0.002]])
    assert large_residual_threshold(residual, fitted) == pytest.approx(0.02)
    assert large_residual_threshold(residual * 100, fitted) == pytest.approx(5 * 0.2)  # median


def test_bad_input_names_what_is_missing(walk):
    with pytest.raises(InspectError, match="viewer needs 'fitted_position'"):
        viewer_figure(walk.drop_vars("fitted_position"))
    with pytest.raises(InspectError, match="no joint 'tail' with angles; joints: spine"):
        viewer_spec(walk, joint="tail")
    with pytest.raises(InspectError, match="valid individuals: individual_0, individual_1"):
        viewer_spec(walk, individual="nobody")


def test_viewer_of_a_fly_without_observed_keypoints(hop):
    spec = viewer_spec(hop)
    assert not traces_of(spec, "observed")
    (trace,) = traces_of(spec, "skeleton")
    got = frame_points(spec, 60, trace)
    joints = spec["data"][trace]["meta"]["joints"]
    want = hop["fitted_position"].isel(time=60, individual=0).transpose("keypoint", "space")
    names = [str(k) for k in hop["keypoint"].values]
    ok = np.array([j != "" for j in joints])
    np.testing.assert_array_equal(
        got[ok], np.array([want.values[names.index(j)] for j in joints if j], np.float32)
    )
    assert spec["layout"]["scene"]["camera"]["up"] == {"x": 0.0, "y": 0.0, "z": 1.0}


def test_reopened_store_gives_the_same_figure(fits_root, walk_spec):
    again = viewer_spec(open_fit(fits_root / "walk.zarr"), keep_frames=[123])
    (trace,) = traces_of(again, "skeleton", "individual_1")
    (before,) = traces_of(walk_spec, "skeleton", "individual_1")
    np.testing.assert_array_equal(
        frame_points(again, 77, trace), frame_points(walk_spec, 77, before)
    )
