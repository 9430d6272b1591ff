"""Per-keypoint weights and coordinate tasks against scipy's least squares on the same
objective (Arm26, OpenSim's two-coordinate arm, imported)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import least_squares

from pipeline.errors import ConfigError
from pipeline.kinematics.fk_jacobian import forward_kinematics
from pipeline.solve import CoordinateTasks, SolverConfig, solve_frames, solve_sequence

ARM26 = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "opensim" / "arm26"
TIGHT = SolverConfig(
    engine="numpy",
    neutral_weight=0.0,
    position_tolerance=1e-12,
    angle_tolerance=1e-12,
    cost_tolerance=0.0,
    n_iterations=200,
    uncertainty=False,
)


@pytest.fixture(scope="module")
def arm():
    pytest.importorskip("opensim")
    from pipeline.bodyplan.importers.osim import import_osim

    return import_osim(ARM26 / "arm26.osim")


def _markers(plan) -> np.ndarray:
    return np.array(
        [
            i
            for i, j in enumerate(plan.joints)
            if j.parent and not j.dofs and j.name.startswith("r_")
        ]
    )


def _targets(plan, rng, n=4):
    q = rng.uniform(0.2, 1.2, (n, plan.n_dofs))
    p = np.asarray(forward_kinematics(plan, q), float)
    p = p + rng.normal(0, 0.01, p.shape)  # not exactly reachable: weights matter
    keep = np.zeros(plan.n_joints, bool)
    keep[_markers(plan)] = True
    p[:, ~keep] = np.nan
    return p, keep


def _reference(plan, target, kw, tw, tt, q0):
    obs = np.flatnonzero(np.isfinite(target[:, 0]))

    def res(q):
        fk = np.asarray(forward_kinematics(plan, q), float)
        r = (np.sqrt(kw[obs])[:, None] * (fk[obs] - target[obs])).ravel()
        return np.concatenate([r, np.sqrt(tw) * (q - tt)])

    return least_squares(res, q0, xtol=1e-15, ftol=1e-15, gtol=1e-15).x


@pytest.mark.parametrize("engine", ["numpy", "compiled"])
def test_keypoint_weights_and_tasks_match_scipy(arm, engine):
    from dataclasses import replace

    config = replace(TIGHT, engine=engine)
    rng = np.random.default_rng(3)
    target, keep = _targets(arm, rng)
    kw = np.where(keep, rng.uniform(0.1, 10.0, arm.n_joints), 0.0)
    name = arm.dof_names[1]
    tasks = CoordinateTasks({name: 0.05}, {name: np.linspace(0.1, 0.4, target.shape[0])})
    fit = solve_frames(arm, target, config=config, keypoint_weights=kw, coordinate_tasks=tasks)
    tw, tt = tasks.arrays(arm, target.shape[0])
    for t in range(target.shape[0]):
        ref = _reference(arm, target[t], kw, tw, tt[t], np.asarray(fit.dof_value[t]))
        np.testing.assert_allclose(fit.dof_value[t], ref, atol=1e-7)
    # the task pulls: without it the fitted coordinate is elsewhere
    free = solve_frames(arm, target, config=config, keypoint_weights=kw)
    assert np.max(np.abs(free.dof_value[:, 1] - fit.dof_value[:, 1])) > 1e-3
    seq = solve_sequence(arm, target, config=config, keypoint_weights=kw, coordinate_tasks=tasks)
    np.testing.assert_allclose(seq.dof_value, fit.dof_value, atol=1e-7)
    # the same tasks as constants in SolverConfig (the run config's ``solver`` section)
    const = CoordinateTasks({name: 0.05}, {name: 0.3})
    by_arg = solve_frames(arm, target, config=config, keypoint_weights=kw, coordinate_tasks=const)
    by_config = solve_frames(
        arm,
        target,
        config=replace(config, coordinate_tasks={name: (0.05, 0.3)}),
        keypoint_weights=kw,
    )
    np.testing.assert_allclose(by_config.dof_value, by_arg.dof_value, atol=1e-12)


def test_keypoint_weights_differ_from_uniform(arm):
    rng = np.random.default_rng(4)
    target, keep = _targets(arm, rng, 2)
    kw = np.where(keep, 1.0, 0.0)
    kw[_markers(arm)[-1]] = 100.0  # the wrist marker: it moves with both
    a = solve_frames(arm, target, config=TIGHT, keypoint_weights=kw)
    b = solve_frames(arm, target, config=TIGHT)
    ref = _reference(
        arm, target[0], kw, np.zeros(arm.n_dofs), np.zeros(arm.n_dofs), np.asarray(a.dof_value[0])
    )
    np.testing.assert_allclose(a.dof_value[0], ref, atol=1e-7)
    assert np.max(np.abs(a.dof_value - b.dof_value)) > 1e-4


def test_bad_tasks_and_weights_are_named(arm):
    target, _ = _targets(arm, np.random.default_rng(5), 2)
    with pytest.raises(ConfigError, match="'nope'.*valid: "):
        solve_frames(
            arm,
            target,
            config=TIGHT,
            coordinate_tasks=CoordinateTasks({"nope": 1.0}, {"nope": 0.0}),
        )
    with pytest.raises(ConfigError, match="keypoint_weights: shape"):
        solve_frames(arm, target, config=TIGHT, keypoint_weights=np.ones(2))
    with pytest.raises(ConfigError, match="SolverConfig.coordinate_tasks: must map DOF names"):
        SolverConfig(coordinate_tasks={arm.dof_names[0]: (-1.0, 0.0)})
    with pytest.raises(ConfigError, match="coordinate task 'nope': not a DOF.*valid: "):
        solve_frames(arm, target, config=SolverConfig(coordinate_tasks={"nope": (1.0, 0.0)}))


def test_named_keypoint_weights_in_solver_config_and_run_config(arm):
    from pipeline.config.models import RunConfig

    target, keep = _targets(arm, np.random.default_rng(6), 3)
    kw = np.where(keep, 1.0, 0.0)
    kw[_markers(arm)[-1]] = 25.0
    by_array = solve_frames(arm, target, config=TIGHT, keypoint_weights=kw)
    named = {"r_radius_styloid": 25.0}
    from dataclasses import replace

    by_name = solve_frames(arm, target, config=replace(TIGHT, keypoint_weights=named))
    np.testing.assert_allclose(by_name.dof_value, by_array.dof_value, atol=1e-9)
    run = RunConfig.model_validate({"solver": {"keypoint_weights": named}})
    assert run.solver_config.keypoint_weights == named
    with pytest.raises(ConfigError, match="'nope' is not a joint.*valid: "):
        solve_frames(arm, target, config=replace(TIGHT, keypoint_weights={"nope": 1.0}))
    with pytest.raises(ConfigError, match="keypoint_weights: must map"):
        SolverConfig(keypoint_weights={"r_radius_styloid": -1.0})
