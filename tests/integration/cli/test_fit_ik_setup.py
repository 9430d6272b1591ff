"""``kinefit fit`` with a run config's ``ik_setup``: the setup's marker weights and
coordinate tasks in a session fit, held against OpenSim's published IK of the walk."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from flows.cli import app
from pipeline.bodyplan import save_body_plan
from pipeline.bodyplan.engine_config import to_engine_configuration
from pipeline.store import open_fit
from pipeline.tracks.opensim_storage import read_storage
from tests.fixtures.opensim_walk import walk_excerpt
from tests.fixtures.shared_data import SHARED

osim = pytest.importorskip("opensim")
osim.Logger.setLevelString("error")

DATA = SHARED / "data" / "opensim" / "gait2392"
runner = CliRunner()
SOLVER = (  # OpenSim's objective: least squares, no prior, absolute units, tight stop
    "solver.loss=l2",
    "solver.neutral_weight=0.0",
    "solver.length_scale=1.0",
    "solver.position_tolerance=1e-9",
    "solver.angle_tolerance=1e-9",
    "solver.cost_tolerance=0.0",
    "solver.n_iterations=200",
)


def test_fit_with_a_config_ik_setup_reproduces_opensims_published_angles(tmp_path):
    from pipeline.bodyplan.importers.osim import import_osim

    with pytest.warns(UserWarning):  # mtp has no marker below it
        plan = import_osim(DATA / "subject01_simbody.osim")
    plan_file = save_body_plan(plan, tmp_path / "subject01.json")
    tracks = tmp_path / "walk.zarr"
    trial = walk_excerpt(tmp_path / "walk.trc", 30, 12)  # 0.5-0.7 s
    result = runner.invoke(app, ["ingest", str(trial), "-o", str(tracks)])
    assert result.exit_code == 0, result.output

    def fit(out, *setting):
        sets = [a for s in (*SOLVER, *setting) for a in ("--set", s)]
        args = ["fit", str(tracks), "-b", str(plan_file), "-o", str(out), "--workers", "0"]
        result = runner.invoke(app, [*args, *sets])
        assert result.exit_code == 0, result.output
        ds = open_fit(out)
        q = np.asarray(ds["dof_value"].isel(individual=0).values, np.float64)
        return ds["time"].values, to_engine_configuration(plan, q)

    times, mine = fit(tmp_path / "with.zarr", f"ik_setup={DATA / 'subject01_Setup_IK.xml'}")
    ref = read_storage(DATA / "subject01_walk1_ik.mot")
    rows = [int(np.argmin(np.abs(ref["time"].values - t))) for t in times]
    for c in ("hip_flexion_r", "knee_angle_l", "subtalar_angle_r", "subtalar_angle_l"):
        d = np.degrees(mine[c]) - ref["value"].sel(coordinate=c).values[rows]
        rms = float(np.sqrt(np.mean(d * d)))
        print(f"with the setup: {c:18s} RMS {rms:.4f} deg")
        assert rms < 0.05, c
    _, plain = fit(tmp_path / "without.zarr")  # no tasks: subtalar is free, markers equal
    d = (
        np.degrees(plain["subtalar_angle_l"])
        - ref["value"].sel(coordinate="subtalar_angle_l").values[rows]
    )
    print(f"without: subtalar_angle_l RMS {np.sqrt(np.mean(d * d)):.2f} deg")
    assert np.sqrt(np.mean(d * d)) > 1.0  # the setup's tasks and weights made the difference
