"""Engine qpos set into MuJoCo puts the model's bodies where kinefit's fit put its joints."""

from __future__ import annotations

import warnings

import mujoco
import numpy as np
import pandas as pd
import pytest
import yourdfpy

from pipeline.bodyplan import load_body_plan
from pipeline.errors import ExportError
from pipeline.export import export
from pipeline.export.common import fit_plan
from pipeline.kinematics import forward_kinematics
from pipeline.store.fit import open_fit
from tests.fixtures.export_fits import fit_model
from tests.fixtures.shared_data import SHARED

MJCF = SHARED / "data" / "models" / "mjcf"
MODELS = {"h1": "unitree_h1.nomesh.xml", "panda": "franka_panda.nomesh.xml"}


@pytest.fixture(scope="module")
def model_fits(tmp_path_factory):
    root = tmp_path_factory.mktemp("mjcf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the panda's coupled fingers import as independent DOFs
        return {n: fit_model(load_body_plan(MJCF / f), root, n) for n, f in MODELS.items()}


@pytest.mark.parametrize("name", list(MODELS))
def test_qpos_in_mujoco_matches_the_fitted_joints(name, model_fits, tmp_path):
    store = model_fits[name]
    result = export("qpos", store, tmp_path / f"{name}.npz")
    saved = np.load(result.files[0])
    fit = open_fit(store)
    plan = fit_plan(fit)
    sel = fit.isel(individual=0)
    fitted = forward_kinematics(
        plan,
        sel["dof_value"].values,
        sel["root_position"].values,
        sel["root_orientation"].values,
    )
    model = mujoco.MjModel.from_xml_path(str(MJCF / MODELS[name]))
    data = mujoco.MjData(model)
    assert saved["qpos"].shape == (fit.sizes["time"], model.nq)
    bodies = [model.body(i).name for i in range(1, model.nbody)]
    shared = [b for b in bodies if b in plan.joint_names]
    assert len(shared) >= len(bodies) - 1
    worst = 0.0
    for t, row in enumerate(saved["qpos"]):
        data.qpos[:] = row
        mujoco.mj_kinematics(model, data)
        for body in shared:
            gap = data.xpos[model.body(body).id] - fitted[t, plan.joint_index(body)]
            worst = max(worst, float(np.abs(gap).max()))
    assert worst < 1e-9
    np.testing.assert_allclose(saved["time"], fit["time"].values)
    assert str(saved["engine"]) == "mujoco" and len(saved["names"]) == model.nq


def test_qpos_csv_holds_the_same_numbers(model_fits, tmp_path):
    npz = np.load(export("qpos", model_fits["h1"], tmp_path / "h1.npz").files[0])
    table = pd.read_csv(export("qpos", model_fits["h1"], tmp_path / "h1.csv").files[0])
    assert list(table.columns) == ["time", *npz["names"]]
    assert list(table.columns[1:8]) == [
        f"root/{a}" for a in ("x", "y", "z", "qw", "qx", "qy", "qz")
    ]
    np.testing.assert_array_equal(table.iloc[:, 1:].to_numpy(), npz["qpos"])


def test_qpos_of_a_plan_without_engine_mapping_is_refused(fits_root, model_fits, tmp_path):
    with pytest.raises(ExportError, match=r"qpos export: the fitted plan has no engine mapping"):
        export("qpos", fits_root / "walk.zarr", tmp_path / "w.npz")
    with pytest.raises(ExportError, match=r"w\.txt: does not end in \.npz or \.csv"):
        export("qpos", model_fits["h1"], tmp_path / "w.txt")
    assert not list(tmp_path.iterdir())


def test_urdf_joint_values_in_yourdfpy_match_the_fitted_joints(tmp_path):
    path = SHARED / "data" / "models" / "urdf" / "unitree_h1.urdf"
    plan = load_body_plan(path)
    store = fit_model(plan, tmp_path, "h1_urdf", n_frames=20)
    table = pd.read_csv(export("qpos", store, tmp_path / "h1.csv").files[0])
    fit = open_fit(store)
    fitted = forward_kinematics(fit_plan(fit), fit["dof_value"].isel(individual=0).values)
    robot = yourdfpy.URDF.load(str(path), load_meshes=False, build_scene_graph=True)
    assert sorted(table.columns[1:]) == sorted(robot.actuated_joint_names)
    worst = 0.0
    for t in range(len(table)):
        robot.update_cfg({j: float(table[j].iloc[t]) for j in table.columns[1:]})
        for link in robot.link_map:
            if link in plan.joint_names:
                gap = robot.get_transform(link)[:3, 3] - fitted[t, plan.joint_index(link)]
                worst = max(worst, float(np.abs(gap).max()))
    assert worst < 1e-9
