"""Plot helpers on real fits: non-blank figures, the right data drawn, clear refusals."""

import io
import math

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from PIL import Image

from pipeline.inspect import (
    InspectError,
    figure_png,
    open_archive,
    open_observed,
    plot_archive_overview,
    plot_dof_trajectories,
    plot_error_distributions,
    plot_residual_heatmap,
    plot_skeleton_frame,
    plot_solver_convergence,
)
from pipeline.inspect.data.checks import attr_dict
from tests.fixtures.inspect_samples import handmade_fit

# make check skips it: draws every figure of a fitted archive
pytestmark = pytest.mark.slow

HELPERS = {
    "dofs": plot_dof_trajectories,
    "heatmap": plot_residual_heatmap,
    "distributions": plot_error_distributions,
    "skeleton": plot_skeleton_frame,
    "solver": plot_solver_convergence,
}


def pixel_std(fig: Figure) -> float:
    """Standard deviation of the rendered PNG's grey levels (0 for a blank image)."""
    image = np.asarray(Image.open(io.BytesIO(figure_png(fig))).convert("L"), dtype=float)
    return float(image.std())


@pytest.mark.parametrize("session", ["walk", "hop"])
@pytest.mark.parametrize("name", list(HELPERS))
def test_every_helper_draws_a_non_blank_figure_without_pyplot(name, session, request):
    fit = request.getfixturevalue(session)
    fig = HELPERS[name](fit)
    assert isinstance(fig, Figure)
    assert fig.canvas.manager is None  # not registered with pyplot
    assert pixel_std(fig) > 20


def test_blank_figure_has_no_variance():
    assert pixel_std(Figure(figsize=(2, 2))) == 0


def test_archive_overview_is_non_blank(fits_root):
    assert pixel_std(plot_archive_overview(open_archive(fits_root).summary)) > 20


def test_dof_panels_shade_the_body_plans_limits(walk):
    fig = plot_dof_trajectories(walk, individual="individual_1", dofs=["knee_l", "hip_l"])
    axes = [ax for ax in fig.axes if ax.get_visible()]
    titles = [ax.get_title() for ax in axes]
    assert titles == [
        "knee_l/0 (deg)",
        "hip_l/swing_y (deg)",
        "hip_l/swing_z (deg)",
        "hip_l/twist (deg)",
    ]

    def limit_lines(ax):
        return sorted(
            round(float(line.get_ydata()[0]), 6)
            for line in ax.lines
            if line.get_linestyle() == "--"
        )

    assert limit_lines(axes[0]) == [0.0, 150.0]  # knee hinge 0..150 deg
    assert limit_lines(axes[1]) == pytest.approx([-math.degrees(0.7), math.degrees(0.7)])
    assert limit_lines(axes[2]) == pytest.approx([-math.degrees(1.75), math.degrees(1.75)])
    assert limit_lines(axes[3]) == pytest.approx([-math.degrees(0.7), math.degrees(0.7)])
    assert len(axes[0].patches) == 2  # both sides beyond the limits shaded
    # the drawn trajectory is the stored one, in degrees
    drawn = axes[0].lines[0].get_ydata()
    stored = walk["dof_value"].sel(individual="individual_1", dof="knee_l/0").values
    np.testing.assert_allclose(drawn, np.degrees(stored))
    ymin, ymax = axes[0].get_ylim()
    assert ymin < 0 and ymax > 150


def test_dof_plot_in_radians_and_without_a_body_plan():
    fit = handmade_fit(np.ones((20, 1)))
    fig = plot_dof_trajectories(fit, degrees=False)
    assert [ax.get_title() for ax in fig.axes[:2]] == ["d0 (rad or length)", "d1 (rad or length)"]
    np.testing.assert_allclose(fig.axes[0].lines[0].get_ydata(), np.sin(np.arange(20) / 5))


def test_residual_heatmap_shows_the_residuals(walk):
    fig = plot_residual_heatmap(walk, individual="individual_0")
    image = fig.axes[0].images[0].get_array()
    expected = walk["residual"].sel(individual="individual_0").transpose("keypoint", "time")
    np.testing.assert_array_equal(image.mask, np.isnan(expected.values))
    np.testing.assert_allclose(image.filled(np.nan), expected.values)
    assert fig.axes[0].get_yticklabels()[0].get_text() == "pelvis"


def test_long_sessions_are_binned_keeping_the_peaks():
    rms = np.full((9001, 1), 0.01)
    rms[4567, 0] = 3.0  # one bad frame among nine thousand
    fit = handmade_fit(rms)
    image = plot_residual_heatmap(fit).axes[0].images[0].get_array()
    assert image.shape[1] <= 2000
    assert image.max() == pytest.approx(6.0)  # keypoint b: twice the RMS
    solver = plot_solver_convergence(fit)
    assert "bins of 5 frames" in solver.get_suptitle()
    peaks = np.concatenate([line.get_ydata() for line in solver.axes[2].lines])
    assert np.nanmax(peaks) == pytest.approx(6.0)


def test_skeleton_frame_draws_every_bone_and_the_observed_keypoints(walk):
    observed = open_observed(walk)
    fig = plot_skeleton_frame(walk, observed, frame=17, individual="individual_0")
    n_bones = walk.sizes["keypoint"] - 1  # every joint but the root hangs from a parent
    front = fig.axes[1]
    assert front.get_title() == "front (x–y)"  # the mannequin is +Y up
    (bones,) = [c for c in front.collections if isinstance(c, LineCollection)]
    assert len(bones.get_segments()) == n_bones
    seen = observed.isel(time=17).sel(individual="individual_0").transpose("keypoint", "space")
    seen = seen.values[:, [0, 1]]
    seen = seen[np.isfinite(seen).all(axis=1)]
    crosses = [c for c in front.collections if c.get_offsets().shape[0] == len(seen)]
    assert crosses and np.allclose(crosses[-1].get_offsets(), seen)
    assert "frame 17" in fig.get_suptitle()


def test_skeleton_frame_defaults_to_the_worst_frame(walk):
    rms = walk["rms_error"].values.max(axis=1)
    fig = plot_skeleton_frame(walk)
    assert f"(frame {int(np.nanargmax(rms))})" in fig.get_suptitle()
    assert "fitted only" in fig.get_suptitle()
    t = float(walk["time"][5])
    assert "(frame 5)" in plot_skeleton_frame(walk, time=t + 1e-4).get_suptitle()


def test_solver_plot_shows_iterations_and_the_cap(walk):
    fig = plot_solver_convergence(walk, individual="individual_1")
    ax = fig.axes[0]
    np.testing.assert_array_equal(
        ax.lines[0].get_ydata(), walk["iterations"].sel(individual="individual_1").values
    )
    cap = attr_dict(walk.attrs["solver_config"])["n_iterations"]  # the default's cap
    assert any(line.get_label() == f"cap ({cap})" for line in ax.lines)
    seam_ax = fig.axes[3]
    (stem,) = [c for c in seam_ax.collections]
    (segment,) = stem.get_segments()
    seam = float(walk["seam_disagreement"].sel(individual="individual_1").values[1])
    assert segment[1, 1] == pytest.approx(seam)
    assert segment[0, 0] == pytest.approx(float(walk["time"][100]))


def test_helpers_take_a_named_dataarray(walk):
    assert pixel_std(plot_residual_heatmap(walk["residual"])) > 20
    assert pixel_std(plot_dof_trajectories(walk["dof_value"], dofs="knee_r")) > 20


MISSING = [
    (plot_dof_trajectories, "dof_value"),
    (plot_residual_heatmap, "residual"),
    (plot_error_distributions, "residual"),
    (plot_skeleton_frame, "fitted_position"),
    (plot_solver_convergence, "iterations"),
    (plot_solver_convergence, "converged"),
]


@pytest.mark.parametrize(("helper", "variable"), MISSING)
def test_helpers_reject_a_dataset_missing_a_variable_naming_it(helper, variable, walk):
    with pytest.raises(
        InspectError,
        match=rf"{helper.__name__} needs .*missing variable\(s\) "
        rf"'{variable}' \(the dataset has: ",
    ):
        helper(walk.drop_vars(variable))


def test_helpers_reject_wrong_dims_unnamed_arrays_and_bad_selections(walk):
    flat = walk.assign(residual=walk["residual"].isel(keypoint=0))
    with pytest.raises(InspectError, match="'residual' lacks dim\\(s\\) 'keypoint'"):
        plot_residual_heatmap(flat)
    with pytest.raises(InspectError, match="unnamed DataArray.*named 'residual'"):
        plot_residual_heatmap(xr.DataArray(np.zeros((2, 2, 2)), dims=("time", "individual", "x")))
    with pytest.raises(TypeError, match="expected an xarray Dataset or DataArray, got dict"):
        plot_solver_convergence({"iterations": 1})
    with pytest.raises(
        InspectError,
        match="unknown individual.*'ghost'.*valid individuals: individual_0, individual_1",
    ):
        plot_residual_heatmap(walk, individual="ghost")
    with pytest.raises(InspectError, match="no DOF or joint named 'tail'.*joints with DOFs: spine"):
        plot_dof_trajectories(walk, dofs="tail")
    with pytest.raises(InspectError, match="selects no frame; the fit spans 0 to 1.99"):
        plot_error_distributions(walk, time=(50, 60))
    with pytest.raises(InspectError, match="frame 999 is out of range; the fit has 200 frames"):
        plot_skeleton_frame(walk, frame=999)
    with pytest.raises(InspectError, match="observed positions lack dim\\(s\\) space, keypoint"):
        plot_skeleton_frame(walk, walk["rms_error"])
    with pytest.raises(InspectError, match="needs column\\(s\\) median_rms"):
        plot_archive_overview(pd.DataFrame({"frames": [200]}, index=["walk"]))


def test_time_window_restricts_every_time_plot(walk):
    fig = plot_solver_convergence(walk, time=(0.5, 1.0))
    t = fig.axes[0].lines[0].get_xdata()
    assert t.min() == pytest.approx(0.5) and t.max() == pytest.approx(1.0)
    heat = plot_residual_heatmap(walk, time=slice(0.5, 1.0)).axes[0].images[0]
    assert heat.get_array().shape == (walk.sizes["keypoint"], 51)
