"""The subtree-moment assembly equals explicit Jacobian rows; the step equals a dense solve."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.kinematics import forward_kinematics, jacobian
from pipeline.solve import SolverConfig
from pipeline.solve.numpy.forward import evaluate
from pipeline.solve.numpy.moments import assemble_moments
from pipeline.solve.numpy.normal import assemble_rows, solve_normal
from pipeline.solve.problem import prepare
from tests.fixtures.plan_factory import random_plan, random_pose


def problem(seed, kinds, fixed):
    rng = np.random.default_rng(seed)
    plan = random_plan(rng, n_joints=8, kinds=kinds, fixed_base=fixed)
    q, rp, rq = random_pose(plan, rng, n=5)
    t = forward_kinematics(plan, q, rp, rq) + rng.normal(size=(5, plan.n_joints, 3))
    t[:, 2] = np.nan
    prob = prepare(plan, t, rng.uniform(size=(5, plan.n_joints)), SolverConfig(), None)
    q2, rp2, rq2 = random_pose(plan, rng, n=5)
    return plan, prob, evaluate(prob, np.arange(5), rp2, rq2, q2, True), (q2, rp2, rq2)


@pytest.mark.parametrize("seed", range(12))
def test_moment_assembly_equals_explicit_rows(seed):
    _, prob, ev, _ = problem(seed, kinds=bool(seed % 2), fixed=seed % 3 == 0)
    rows = assemble_rows(prob.model, ev.st, ev.residual, ev.weight, None)
    moments = assemble_moments(prob.model, ev.st, ev.residual[:, 0], ev.weight[:, 0])
    for a, b in zip(rows, moments, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-11)


@pytest.mark.parametrize("seed", range(6))
def test_block_elimination_equals_a_dense_solve(seed):
    plan, prob, ev, (q, rp, rq) = problem(seed, kinds=True, fixed=bool(seed % 2))
    cfg = prob.config
    step, bound = solve_normal(
        prob.model,
        ev.st,
        ev.residual,
        ev.weight,
        None,
        q,
        cfg.neutral_weight,
        np.full(5, cfg.damping),
    )
    lower, upper = prob.model.lower, prob.model.upper
    # random poses clamped onto limits: seeds 0, 1, 3, 4 and 5 hold coordinates there
    assert bound.any() or seed == 2
    n_root = 0 if plan.fixed_base else 6
    # a fixed base is pinned at the origin: the solver ignores any root pose there
    jac = jacobian(plan, q, *((None, None) if plan.fixed_base else (rp, rq)))
    for s in range(5):
        w = np.repeat(prob.weight[s, 0], 3)
        js = jac[s].reshape(-1, jac.shape[-1])
        r = ev.residual[s, 0].reshape(-1)
        a = js.T @ (w[:, None] * js)
        b = js.T @ (w * r)
        prior = cfg.neutral_weight * plan.dof_weight_scalers
        a[n_root:, n_root:] += np.diag(prior)
        b[n_root:] -= prior * (q[s] - plan.neutral)
        d = np.diag(a).copy()
        a[np.diag_indices_from(a)] += cfg.damping * np.maximum(d, 1.0)
        # held: locked, or on a limit with the descent direction b pointing out of it
        g = b[n_root:]
        out = ((q[s] <= lower) & (g < 0)) | ((q[s] >= upper) & (g > 0))
        np.testing.assert_array_equal(bound[s], out & (lower != upper))
        held = n_root + np.flatnonzero(out | (lower == upper))
        a[held, :] = a[:, held] = 0.0
        a[held, held] = 1.0
        b[held] = 0.0
        np.testing.assert_allclose(step[s], np.linalg.solve(a, b), rtol=1e-8, atol=1e-9)
