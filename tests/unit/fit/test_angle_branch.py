"""Stored hinge angles stay on one branch: no 2 pi jumps, the same poses as solved."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from pipeline.fit import fit_session
from pipeline.fit.angle_branch import TWO_PI, keep_on_branch, periodic_dofs
from pipeline.kinematics import forward_kinematics
from pipeline.solve import SolverConfig
from pipeline.store import write_tracks
from pipeline.store.fit import open_fit
from tests.fixtures.plan_factory import chain_plan, joint, v2_plan

SPIN = 0.45  # rad per frame about the first hinge: 13 rad (> 2 turns) over 30 frames


def _jumps(values: np.ndarray) -> float:
    """Largest frame-to-frame change (rad) of ``values (time, ...)``."""
    return float(np.nanmax(np.abs(np.diff(values, axis=0))))


def test_a_sequence_many_turns_off_comes_back_near_neutral_without_changing_the_pose():
    plan = chain_plan()
    rng = np.random.default_rng(0)
    true = np.column_stack([SPIN * np.arange(30), 0.3 * np.sin(np.arange(30))])
    turns = rng.integers(-25, 25, size=true.shape)  # e.g. 8978 degrees: 25 turns
    solved = true + TWO_PI * turns
    kept = keep_on_branch(solved, plan)
    assert _jumps(kept) < np.pi
    np.testing.assert_allclose(kept, true, atol=1e-9)  # first frame near neutral 0
    np.testing.assert_allclose(
        forward_kinematics(plan, kept), forward_kinematics(plan, solved), atol=1e-9
    )


def test_limits_wider_than_a_turn_bound_the_branch_and_narrow_ones_are_left_alone():
    wide = (-1.5 * np.pi, 1.5 * np.pi)
    plan = v2_plan(
        joint("root", None, kind="fixed"),
        joint("a", "root", (1, 0, 0), kind="hinge", axis=[0, 0, 1], limits=list(wide)),
        joint("b", "a", (1, 0, 0), kind="hinge", axis=[0, 0, 1], limits=[-1.0, 1.0]),
        joint("tip", "b", (1, 0, 0), kind="fixed"),
    )
    a = np.linspace(0.0, 6.0, 25)  # wanders past the upper limit 4.71 on its own branch
    solved = np.column_stack([a - TWO_PI * (a > np.pi), np.full(25, 0.9)])  # in limits
    kept = keep_on_branch(solved, plan)
    assert (kept[:, 0] >= wide[0]).all() and (kept[:, 0] <= wide[1]).all()
    np.testing.assert_allclose(kept[a <= 4.7, 0], a[a <= 4.7], atol=1e-9)
    np.testing.assert_array_equal(kept[:, 1], solved[:, 1])


def test_slides_swings_and_coordinates_that_drive_functions_are_not_periodic():
    plan = v2_plan(
        joint("root", None, kind="fixed"),
        joint("s", "root", (1, 0, 0), kind="prismatic", axis=[1, 0, 0]),
        joint("ball", "s", (1, 0, 0), kind="ball", axis=[1, 0, 0]),
        joint("tip", "ball", (1, 0, 0), kind="fixed"),
    )
    assert periodic_dofs(plan).tolist() == [False, False, False, True]  # the twist only


@pytest.fixture(scope="module")
def spun(tmp_path_factory):
    """A chain spinning over two turns, in 5-frame chunks, each warmed up cold."""
    plan = chain_plan()
    q = np.column_stack([SPIN * np.arange(30), 0.4 + 0.2 * np.sin(np.arange(30))])
    xyz = forward_kinematics(plan, q)  # (time, joint, 3)
    folder = tmp_path_factory.mktemp("spin")
    ds = xr.Dataset(
        {
            "position": (
                ("time", "space", "keypoint", "individual"),
                xyz.transpose(0, 2, 1)[..., None],
            ),
            "confidence": (("time", "keypoint", "individual"), np.ones((30, 4, 1))),
        },
        coords={
            "time": np.arange(30) / 30.0,
            "space": ["x", "y", "z"],
            "keypoint": list(plan.joint_names),
            "individual": ["id0"],
        },
        attrs={"fps": 30.0, "time_unit": "seconds", "unit": "m", "source_software": "test"},
    )
    tracks = write_tracks(ds.astype(np.float32), folder / "t.zarr", chunk_frames=5)
    config = SolverConfig(n_iterations=60)
    fit_session(tracks, plan, config, folder / "f.zarr", chunk_frames=5, overlap_frames=2)
    return plan, q, open_fit(folder / "f.zarr").load()


def test_chunks_solved_apart_are_stored_on_one_branch(spun):
    plan, q, fit = spun
    stored = fit["dof_value"].values[:, 0]  # (time, dof)
    assert _jumps(stored) < np.pi
    np.testing.assert_allclose(stored, q, atol=1e-3)  # the true, spinning branch


def test_forward_kinematics_of_the_stored_angles_is_the_solver_s_pose(spun):
    plan, _, fit = spun
    stored = fit["dof_value"].values[:, 0]
    fitted = fit["fitted_position"].values[..., 0].transpose(0, 2, 1)  # (time, joint, 3)
    np.testing.assert_allclose(forward_kinematics(plan, stored), fitted, atol=1e-5)


def test_the_seam_diagnostic_compares_chunks_on_the_same_branch(spun):
    _, _, fit = spun
    seams = fit["seam_disagreement"].values[1:]  # seam 0 has no chunk before it
    assert seams.size == 5 and np.nanmax(seams) < 1e-3
