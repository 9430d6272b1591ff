"""``SolverConfig.tolerance_on="distance"``: the tolerances bound the distance left.

:func:`~pipeline.solve.rules.small_update` is the **Stop** rule's *small* in every loop.
With ``"step"`` it is the update under both tolerances; with ``"distance"`` it
extrapolates the frame's linear rate of convergence, ``update * r / (1 - r)``, where that
rate is fast enough to trust. The case tests state the rule; the fit tests hold it
against the converged optimum of OpenSim's Gait2392 walk (Gauss-Newton converges
linearly there), which is what OpenSim setups' ``accuracy`` is read as.
"""

from __future__ import annotations

import dataclasses
import itertools
import shutil

import numpy as np
import pytest

from pipeline.opensim_setup.ik_run import ik_problem
from pipeline.solve import SolverConfig, solve_sequence
from pipeline.solve.rules import NO_UPDATE, RATE_TRUSTED, lane_small_updates, small_update
from tests.fixtures.shared_data import SHARED

GAIT = SHARED / "data" / "opensim" / "gait2392"
TOL = 1e-5  # subject01_Setup_IK.xml's accuracy


def _step_rule(p, a, tol_p, tol_a):
    return p < tol_p and a < tol_a


UPDATES = [0.0, 3e-6, 2e-5, 1e-3]
LAST = [NO_UPDATE, 0.0, 1e-5, 1e-4, 1e-2]


def test_small_update_is_the_step_rule_or_the_extrapolated_distance():
    tol_p, tol_a = 1e-5, 2e-5
    for p, a, lp, la in itertools.product(UPDATES, [2 * u for u in UPDATES], LAST, LAST):
        step = _step_rule(p, a, tol_p, tol_a)
        assert small_update(p, a, lp, la, tol_p, tol_a, False) == step
        got = small_update(p, a, lp, la, tol_p, tol_a, True)
        if la == NO_UPDATE:  # no accepted update before: nothing to extrapolate from
            assert got == step
            continue
        ratios = [0.0 if x == 0 else (x / y if y > 0 else np.inf) for x, y in ((p, lp), (a, la))]
        r = max(ratios)
        f = r / (1 - r) if r < RATE_TRUSTED else 1.0
        assert got == _step_rule(p * f, a * f, tol_p, tol_a), (p, a, lp, la)
        assert got or not step  # never stricter than the step rule


def test_a_tenfold_rate_stops_one_update_early():
    """Updates 1e-3, 1e-4, 1e-5, ...: the step rule stops at the first under 1e-5 (the
    fourth update, 1e-6); the distance left after 1e-5 is 1e-5/9, so "distance" stops
    there, one update sooner."""
    updates = [10.0**-k for k in range(3, 9)]

    def stops_at(distance):
        last = NO_UPDATE
        for i, u in enumerate(updates):
            if small_update(0.0, u, 0.0 if last != NO_UPDATE else NO_UPDATE, last, 1.0, TOL,
                            distance):  # fmt: skip
                return i
            last = u
        return None

    assert stops_at(False) == 3
    assert stops_at(True) == 2


def test_the_lane_form_is_the_scalar_rule_on_every_lane():
    rng = np.random.default_rng(0)
    p, a = 10.0 ** rng.uniform(-7, -3, (2, 200))
    last = 10.0 ** rng.uniform(-7, -3, (200, 2))
    last[::5] = NO_UPDATE
    for distance in (False, True):
        got = lane_small_updates(p, a, last, 1e-5, 1e-5, distance)
        want = [small_update(p[i], a[i], *last[i], 1e-5, 1e-5, distance) for i in range(200)]
        np.testing.assert_array_equal(got, want)


@pytest.fixture(scope="module")
def gait(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gait2392")
    for f in GAIT.iterdir():
        shutil.copy(f, folder / f.name)
    return ik_problem(folder / "subject01_Setup_IK.xml")


def _fit(problem, config: SolverConfig):
    return solve_sequence(problem.plan, problem.targets, config=config,
                          keypoint_weights=problem.keypoint_weights,
                          coordinate_tasks=problem.tasks)  # fmt: skip


def test_the_ik_setups_accuracy_bounds_the_distance_to_the_optimum(gait):
    """OpenSim's walk at the setup's accuracy (``tolerance_on="distance"`` and the
    constant-velocity start, :func:`~pipeline.opensim_setup.ik_run.ik_solver_config`):
    every frame ends within twice the accuracy of the optimum converged to 1e-12, in every
    coordinate (rad, m), with a fifth fewer iterations than the step rule from the
    previous frame's solution (OpenSim's start, and kinefit's before) takes."""
    cfg = gait.config
    assert (cfg.tolerance_on, cfg.warm_start, cfg.angle_tolerance) == ("distance", "velocity", TOL)
    optimum = _fit(gait, dataclasses.replace(cfg, position_tolerance=1e-12, angle_tolerance=1e-12,
                                             tolerance_on="step", n_iterations=400))  # fmt: skip
    assert optimum.converged.all()
    fit = _fit(gait, cfg)
    step = _fit(gait, dataclasses.replace(cfg, tolerance_on="step", warm_start="previous"))
    assert fit.converged.all() and step.converged.all()
    gap = np.abs(np.asarray(fit.dof_value) - np.asarray(optimum.dof_value)).max()
    assert gap <= 2 * TOL, gap
    step_gap = np.abs(np.asarray(step.dof_value) - np.asarray(optimum.dof_value)).max()
    assert step_gap <= TOL  # the step rule over-converges: a tenth of an update was left
    assert np.mean(fit.iterations) <= 0.85 * np.mean(step.iterations)
