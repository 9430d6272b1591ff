"""The solver fits coupled plans exactly on both engines."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from pipeline.bodyplan import load_body_plan
from pipeline.kinematics import forward_kinematics
from pipeline.solve import SolverConfig, solve_frames, solve_sequence
from tests.unit.bodyplan.coupled_samples import coupled


def _fixed_plan():
    data = coupled()
    data["fixed_base"] = True
    return load_body_plan(data)


def _truth(plan, rng, n):
    q = np.column_stack([rng.uniform(-0.8, 0.8, n), rng.uniform(-1.8, 0.1, n)])
    return q, forward_kinematics(plan, q)


@pytest.mark.parametrize("engine", ["numpy", "auto", "compiled"])
def test_numpy_engine_recovers_coupled_coordinates(engine, rng):
    plan = _fixed_plan()
    q, targets = _truth(plan, rng, 8)
    config = SolverConfig(
        engine=engine, neutral_weight=0.0, position_tolerance=1e-10, angle_tolerance=1e-10
    )
    result = solve_frames(plan, targets, config=config)
    assert result.converged.all()
    np.testing.assert_allclose(result.dof_value, q, atol=1e-7)
    np.testing.assert_allclose(result.fitted_position, targets, atol=1e-8)


@pytest.mark.parametrize("engine", ["numpy", "compiled"])
def test_free_base_sequence_and_smoothing(rng, engine):
    plan = load_body_plan(coupled())
    n = 12
    time = np.linspace(0.0, 1.0, n)
    q = np.column_stack([0.4 * np.sin(2 * time), -0.9 + 0.6 * np.cos(3 * time)])
    root = np.column_stack([0.1 * time, 0.05 * time, 0.02 * time])
    targets = forward_kinematics(plan, q, root)
    config = SolverConfig(
        neutral_weight=0.0,
        position_tolerance=1e-10,
        angle_tolerance=1e-10,
        cold_root="origin",
        engine=engine,
    )
    result = solve_sequence(plan, targets, config=config)
    np.testing.assert_allclose(result.fitted_position, targets, atol=1e-7)
    smooth = solve_sequence(plan, targets, config=replace(config, temporal="smooth"), fps=30)
    # the smoothed poses' keypoints are the plan's forward kinematics of them
    want = forward_kinematics(plan, smooth.dof_value, smooth.root_position, smooth.root_orientation)
    np.testing.assert_allclose(smooth.fitted_position, want, atol=1e-9)
    assert np.abs(smooth.fitted_position - targets).max() < 1e-2
