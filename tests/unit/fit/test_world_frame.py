"""The world frame of a fit: up-axis rotations, their resolution, and fits in a turned world."""

import itertools
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from scipy.spatial.transform import Rotation

from pipeline.bodyplan import load_body_plan, plan_up_axis
from pipeline.cameras import pack, project, read_calibration
from pipeline.config import make_run_config
from pipeline.errors import ConfigError
from pipeline.export.kimodo.fk import up_axis_matrix
from pipeline.export.opensim import observed_keypoints
from pipeline.fit import fit_session
from pipeline.fit.world_frame import (
    WorldFrameWarning,
    resolve_world_frame,
    rotate_cameras,
    rotate_positions,
    up_rotation,
    up_vector,
)
from pipeline.solve import SolverConfig
from pipeline.store import open_tracks, write_tracks
from pipeline.store.fit import open_fit
from pipeline.tracks.reader_registry import read_tracks
from pipeline.tracks.schema import UP_AXES

DATA = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"
STATIC = DATA / "realdata" / "c3d" / "Sample_Static.c3d"
RAJAGOPAL = DATA / "models" / "osim" / "Rajagopal2016.osim"
#: Plug-in Gait marker -> Rajagopal2016 marker (same names, and the nearest landmarks).
PIG_TO_RAJAGOPAL = {
    **{k: k for k in ("C7", "CLAV", "LASI", "LPSI", "LTOE", "RASI", "RPSI", "RTOE")},
    **dict(LKNE="LLFC", RKNE="RLFC", LANK="LLMAL", RANK="RLMAL", LHEE="LCAL", RHEE="RCAL"),
    **dict(LSHO="LACR", RSHO="RACR", LELB="LLEL", RELB="RLEL"),
}


@pytest.mark.parametrize(("source", "target"), list(itertools.product(UP_AXES, UP_AXES)))
def test_up_rotation_takes_every_up_axis_onto_every_other(source: str, target: str) -> None:
    r = up_rotation(source, target)
    np.testing.assert_allclose(r @ up_vector(source), up_vector(target), atol=1e-15)
    np.testing.assert_allclose(r @ r.T, np.eye(3), atol=1e-15)
    assert np.linalg.det(r) == pytest.approx(1.0)
    assert set(np.unique(np.abs(r))) <= {0.0, 1.0}  # an axis permutation, exactly
    assert np.array_equal(up_rotation(target, source), r.T)  # the way back is the inverse
    if target == "y":  # one convention with the Kimodo exporter's turn to its Y-up frame
        np.testing.assert_array_equal(r, up_axis_matrix(source))


def test_z_up_to_y_up_is_pose2sims_turn() -> None:
    """Pose2Sim's .trc of its Z-up calibration: trc X = world Y, Y = world Z, Z = world X."""
    np.testing.assert_array_equal(up_rotation("z", "y") @ [1.0, 2.0, 3.0], [2.0, 3.0, 1.0])


def test_rotating_observations_equals_the_explicit_matrix(rng) -> None:
    position = rng.normal(size=(4, 3, 7, 2))  # (time, space, keypoint, individual)
    position[1, :, 2] = np.nan
    r = Rotation.random(random_state=3).as_matrix()
    got = rotate_positions(position, r, axis=1)
    expected = np.einsum("ij,tjkn->tikn", r, position)
    np.testing.assert_allclose(got, expected, atol=1e-12)
    assert np.isnan(got[1, :, 2]).all() and np.isfinite(got[0]).all()


def test_resolution_rules() -> None:
    both = resolve_world_frame("z", "y", source="s")
    assert both.reason == "up axes" and both.fit_up == "y"
    np.testing.assert_array_equal(both.matrix, up_rotation("z", "y"))
    assert resolve_world_frame("y", "y").identity
    stated = resolve_world_frame(None, "y", up_axis="+Z")  # the option wins, spelled freely
    np.testing.assert_array_equal(stated.matrix, up_rotation("z", "y"))
    r = Rotation.from_euler("zyx", [10, 20, 30], degrees=True).as_matrix()
    given = resolve_world_frame("z", "y", rotation=r)
    assert given.reason == "rotation"
    np.testing.assert_allclose(given.matrix, r)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resolve_world_frame(None, None).identity  # nothing says they differ: silent
    with pytest.raises(ConfigError, match="not one of"):
        resolve_world_frame("up", "y")
    with pytest.raises(ConfigError, match="not a rotation"):
        resolve_world_frame("z", "y", rotation=np.diag([1.0, 1.0, -1.0]))


@pytest.mark.parametrize(
    ("tracks", "plan", "unknown"), [(None, "y", "tracks'"), ("z", None, "body plan's")]
)
def test_one_unknown_up_axis_warns(tracks, plan, unknown) -> None:
    with pytest.warns(WorldFrameWarning, match=f"the {unknown} up axis is unknown.*--up-axis"):
        frame = resolve_world_frame(tracks, plan, source="session.zarr")
    assert frame.identity


def test_plans_declare_their_up_axis() -> None:
    assert plan_up_axis(load_body_plan(RAJAGOPAL)) == "y"
    from pipeline.bodyplan.mannequin import mannequin

    assert plan_up_axis(mannequin()) == "y"


def _static(tmp_path: Path, frames: int = 5) -> Path:
    ds = read_tracks(STATIC, to_unit="m").isel(time=slice(0, frames))
    path = tmp_path / "static.zarr"
    write_tracks(ds.sel(keypoint=list(PIG_TO_RAJAGOPAL)), path)
    return path


def _pelvis(fit: Path) -> np.ndarray:
    dv = xr.open_zarr(fit)["dof_value"].isel(individual=0)
    return np.degrees(dv.sel(dof=["pelvis_tilt", "pelvis_list", "pelvis_rotation"]).values)


def test_c3d_static_trial_stands_upright_in_a_y_up_opensim_model(tmp_path: Path) -> None:
    """Sample_Static.c3d (Z up) fitted with Rajagopal2016 (Y up), no option given."""
    tracks = _static(tmp_path)
    assert open_tracks(tracks).attrs["up_axis"] == "z"
    plan = load_body_plan(RAJAGOPAL)
    with warnings.catch_warnings():
        warnings.simplefilter("error", WorldFrameWarning)
        fit_session(
            tracks, plan, SolverConfig(), tmp_path / "fit.zarr", keypoint_map=PIG_TO_RAJAGOPAL
        )
    attrs = xr.open_zarr(tmp_path / "fit.zarr").attrs
    assert (attrs["tracks_up_axis"], attrs["plan_up_axis"], attrs["up_axis"]) == ("z", "y", "y")
    np.testing.assert_allclose(attrs["world_rotation"], up_rotation("z", "y"))
    angles = _pelvis(tmp_path / "fit.zarr")
    assert np.abs(angles[:, :2]).max() < 10.0  # tilt and list
    # the .trc export's observed markers are turned into the plan's frame with the fitted ones
    fit = open_fit(tmp_path / "fit.zarr")
    joints, observed = observed_keypoints(fit, str(fit["individual"].values[0]))
    fitted = fit["fitted_position"].isel(individual=0).sel(keypoint=joints)
    gap = np.linalg.norm(observed - fitted.transpose("time", "keypoint", "space").values, axis=-1)
    assert np.nanmedian(gap) < 0.05  # metres; unturned they would be a metre apart
    # the world stated wrongly as Y up: the old, lying-down fit
    fit_session(
        tracks,
        plan,
        SolverConfig(),
        tmp_path / "wrong.zarr",
        keypoint_map=PIG_TO_RAJAGOPAL,
        up_axis="y",
    )
    assert np.abs(_pelvis(tmp_path / "wrong.zarr")[:, :2]).max() > 45.0


def test_fit_of_a_turned_session_equals_the_fit_of_the_original(tmp_path: Path) -> None:
    """Turning the tracks by R and stating world_rotation = R.T gives the same fit."""
    tracks = _static(tmp_path, frames=3)
    ds = open_tracks(tracks).load()
    r = Rotation.from_euler("xyz", [30, -50, 110], degrees=True).as_matrix()
    turned = ds.copy()
    turned["position"] = (ds["position"].dims, rotate_positions(ds["position"].values, r, axis=1))
    write_tracks(turned, tmp_path / "turned.zarr")
    plan = load_body_plan(RAJAGOPAL)
    config = SolverConfig(n_iterations=300, position_tolerance=1e-10, angle_tolerance=1e-10)
    fit_session(tracks, plan, config, tmp_path / "a.zarr", keypoint_map=PIG_TO_RAJAGOPAL)
    fit_session(
        tmp_path / "turned.zarr",
        plan,
        config,
        tmp_path / "b.zarr",
        keypoint_map=PIG_TO_RAJAGOPAL,
        world_rotation=up_rotation("z", "y") @ r.T,
    )
    a, b = xr.open_zarr(tmp_path / "a.zarr"), xr.open_zarr(tmp_path / "b.zarr")
    np.testing.assert_allclose(b["dof_value"].values, a["dof_value"].values, atol=1e-3)
    np.testing.assert_allclose(b["fitted_position"].values, a["fitted_position"].values, atol=1e-4)


def test_turned_cameras_see_the_turned_world_in_the_same_pixels(rng) -> None:
    """A camera turned by rotate_cameras projects R @ p where the original projected p."""
    cameras = read_calibration(DATA / "pose2sim" / "Calib.toml")
    r = up_rotation("z", "y")
    points = rng.normal(0.0, 0.5, (6, 1, 3)) + [0.0, 0.0, 0.9]  # near the demo's subject
    before = project(pack(cameras), points)
    after = project(pack(rotate_cameras(cameras, r)), points @ r.T)
    assert np.isfinite(before).sum() > 20
    np.testing.assert_allclose(after, before, atol=1e-9, equal_nan=True)


def test_the_run_config_states_the_world() -> None:
    run = make_run_config({"up_axis": "z", "world_rotation": np.eye(3).tolist()})
    assert run.up_axis == "z" and run.world_rotation == np.eye(3).tolist()
    with pytest.raises(ConfigError, match="up_axis"):
        make_run_config({"up_axis": "up"})
