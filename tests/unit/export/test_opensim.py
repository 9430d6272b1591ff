"""OpenSim files read back by OpenSim itself: .trc markers, .mot coordinates of an .osim fit."""

from __future__ import annotations

import warnings

import numpy as np
import opensim as osim
import pytest

from pipeline.bodyplan import load_body_plan
from pipeline.errors import ExportError
from pipeline.export import export
from pipeline.export.common import fit_plan
from pipeline.kinematics import forward_kinematics
from pipeline.store.fit import open_fit
from pipeline.store.tracks import open_tracks
from tests.fixtures.export_fits import fit_model
from tests.fixtures.shared_data import SHARED

ARM26 = SHARED / "data" / "models" / "osim" / "arm26.osim"


@pytest.fixture(scope="module")
def arm_fit(tmp_path_factory):
    level = osim.Logger.getLevelString()
    osim.Logger.setLevelString("error")
    try:
        plan = load_body_plan(ARM26)
    finally:
        osim.Logger.setLevelString(level)
    return fit_model(plan, tmp_path_factory.mktemp("arm"), "arm26", up_axis="y")


def _vec3(v):
    return np.array([v.get(i) for i in range(3)])


def test_trc_reads_back_in_opensim(hop, fits_root, tmp_path):
    path = export("trc", fits_root / "lab_b/hop.zarr", tmp_path / "hop.trc").files[0]
    table = osim.TimeSeriesTableVec3(str(path))
    joints = [str(k) for k in hop["keypoint"].values]
    labels = list(table.getColumnLabels())
    assert labels[: len(joints)] == joints
    observed = labels[len(joints) :]
    assert observed and all(o.removesuffix("_observed") in joints for o in observed)
    assert table.getNumRows() == hop.sizes["time"]
    assert table.getTableMetaDataAsString("Units") == hop.attrs["unit"]
    assert float(table.getTableMetaDataAsString("DataRate")) == hop.attrs["fps"]
    time = np.array(table.getIndependentColumn())
    np.testing.assert_allclose(time, hop["time"].values, atol=1e-9)
    fitted = hop["fitted_position"].isel(individual=0)
    for name in ("lf_claw", "rh_tibia_tarsus"):
        column = table.getDependentColumn(name)
        got = np.array([_vec3(column[i]) for i in range(table.getNumRows())])
        np.testing.assert_allclose(
            got, fitted.sel(keypoint=name).transpose("time", "space").values, rtol=1e-6, atol=1e-9
        )


def test_trc_of_fitted_keypoints_only(walk, fits_root, tmp_path):
    files = export("trc", fits_root / "walk.zarr", tmp_path / "w.trc", keypoints="fitted").files
    assert [f.name for f in files] == ["w.individual_0.trc", "w.individual_1.trc"]
    table = osim.TimeSeriesTableVec3(str(files[1]))
    assert table.getNumColumns() == walk.sizes["keypoint"]
    # observed keypoints dropped out of the tracks are NaN
    both = export("trc", fits_root / "walk.zarr", tmp_path / "b.trc", individual="individual_0")
    table = osim.TimeSeriesTableVec3(str(both.files[0]))
    tracks = open_tracks(walk.attrs["tracks_store"])["position"].sel(individual="individual_0")
    missing = np.isnan(tracks).any("space").sum("time")
    name = str(missing["keypoint"].values[int(missing.argmax())])
    assert int(missing.max()) > 0
    column = table.getDependentColumn(f"{name}_observed")
    got = np.array([_vec3(column[i]) for i in range(table.getNumRows())])
    want = tracks.sel(keypoint=name).transpose("time", "space").values
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


def test_mot_reads_back_in_opensim_storage(arm_fit, tmp_path):
    path = export("mot", arm_fit, tmp_path / "arm.mot").files[0]
    storage = osim.Storage(str(path))
    labels = [storage.getColumnLabels().get(i) for i in range(storage.getColumnLabels().getSize())]
    assert labels == ["time", "r_shoulder_elev", "r_elbow_flex"]
    assert storage.isInDegrees() and storage.getSize() == 40
    fit = open_fit(arm_fit)
    row = storage.getStateVector(7).getData()
    dof = fit["dof_value"].isel(individual=0, time=7)
    np.testing.assert_allclose(
        [row.get(0), row.get(1)], np.degrees(dof.sel(dof=labels[1:]).values), rtol=1e-10
    )


def test_mot_loaded_into_the_model_puts_its_markers_where_the_fit_did(arm_fit, tmp_path):
    path = export("mot", arm_fit, tmp_path / "arm.mot").files[0]
    fit = open_fit(arm_fit)
    plan = fit_plan(fit)
    fitted = forward_kinematics(plan, fit["dof_value"].isel(individual=0).values)
    model = osim.Model(str(ARM26))
    state = model.initSystem()
    storage = osim.Storage(str(path))
    model.getSimbodyEngine().convertDegreesToRadians(storage)
    names = [
        storage.getColumnLabels().get(i) for i in range(1, storage.getColumnLabels().getSize())
    ]
    worst, markers = 0.0, list(model.getMarkerSet())
    assert len(markers) == 3
    for f in range(storage.getSize()):
        row = storage.getStateVector(f).getData()
        for k, name in enumerate(names):
            model.getCoordinateSet().get(name).setValue(state, row.get(k), False)
        model.realizePosition(state)
        for marker in markers:
            got = _vec3(marker.getLocationInGround(state))
            worst = max(worst, np.abs(got - fitted[f, plan.joint_index(marker.getName())]).max())
    assert worst < 1e-6  # metres; every arm26 joint maps exactly


def test_mot_of_a_plan_not_from_opensim_is_refused(fits_root, tmp_path):
    with pytest.raises(ExportError, match=r"walk.zarr: mot export: the fitted plan was not "):
        export("mot", fits_root / "walk.zarr", tmp_path / "w.mot")
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_mot_of_a_full_body_model_puts_exactly_mapped_markers_in_place(tmp_path_factory):
    path = SHARED / "data" / "models" / "osim" / "Rajagopal2016.osim"
    osim.Logger.setLevelString("error")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = load_body_plan(path)
    store = fit_model(plan, tmp_path_factory.mktemp("rajagopal"), "rajagopal", n_frames=20)
    mot = export("mot", store, store.with_suffix(".mot")).files[0]
    fit = open_fit(store)
    fitted = forward_kinematics(plan, fit["dof_value"].isel(individual=0).values)
    inexact = {a["child"] for a in plan.extras["x-source"]["approximations"]}

    def exact(joint: int) -> bool:
        while joint >= 0:
            if plan.joint_names[joint] in inexact:
                return False
            joint = int(plan.parent_indices[joint])
        return True

    model = osim.Model(str(path))
    state = model.initSystem()
    storage = osim.Storage(str(mot))
    model.getSimbodyEngine().convertDegreesToRadians(storage)
    labels = storage.getColumnLabels()
    names = [labels.get(i) for i in range(1, labels.getSize())]
    markers = [m for m in model.getMarkerSet() if exact(plan.joint_index(m.getName()))]
    assert len(markers) == model.getMarkerSet().getSize()  # knees and patellae exact
    worst = 0.0
    for f in range(storage.getSize()):
        row = storage.getStateVector(f).getData()
        for k, name in enumerate(names):
            model.getCoordinateSet().get(name).setValue(state, row.get(k), False)
        model.realizePosition(state)
        for marker in markers:
            got = _vec3(marker.getLocationInGround(state))
            worst = max(worst, np.abs(got - fitted[f, plan.joint_index(marker.getName())]).max())
    assert worst < 1e-6


def test_mot_writes_dependent_coordinates_as_opensim_lists_them(tmp_path_factory, tmp_path):
    """Pose2Sim's model has CoordinateCouplerConstraints: their dependent coordinates are
    columns too, at their coupled values, so OpenSim's Storage carries every coordinate."""
    model_file = SHARED / "data" / "pose2sim" / "opensim" / "Model_Pose2Sim_Body25b.osim"
    level = osim.Logger.getLevelString()
    osim.Logger.setLevelString("error")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            plan = load_body_plan(model_file)
        model = osim.Model(str(model_file))  # kept alive: its coordinate set is a view
        coords = model.getCoordinateSet()
    finally:
        osim.Logger.setLevelString(level)
    dependent = plan.extras["x-source"]["engine_configuration"]["dependent"]
    assert dependent
    fit = fit_model(plan, tmp_path_factory.mktemp("p2s"), "p2s", up_axis="y")
    path = export("mot", fit, tmp_path / "p2s.mot").files[0]
    st = osim.Storage(str(path))
    labels = st.getColumnLabels()
    names = [labels.get(i) for i in range(labels.getSize())]
    assert set(dependent) <= set(names)
    fitted = open_fit(fit)
    q = np.asarray(fitted["dof_value"].isel(individual=0).transpose("time", "dof").values)
    from pipeline.bodyplan.engine_config import coupling_values

    values = coupling_values(plan, q)
    for name in dependent:
        col = osim.ArrayDouble()
        st.getDataColumn(name, col)
        got = np.array([col.get(i) for i in range(col.getSize())])
        c = coords.get(name)
        want = np.degrees(values[name]) if c.getMotionType() == 1 else values[name]
        np.testing.assert_allclose(got, want, atol=1e-9)
