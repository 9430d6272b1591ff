"""Solver semantics: limits, missing data, degenerate input, weights, LM and robust losses."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.errors import ConfigError
from pipeline.kinematics import forward_kinematics, jacobian
from pipeline.solve import SolverConfig, solve_frames, solve_sequence
from tests.fixtures.plan_factory import chain_plan, random_plan, random_pose


def test_limits_hold_exactly_after_every_step(rng):
    plan = random_plan(rng, n_joints=8, limits=True, fixed_base=False)
    q, root_pos, quat = random_pose(plan, rng, n=20, scale=3.0)
    # targets from poses far outside the limits
    wild = plan.neutral + rng.normal(scale=3.0, size=q.shape)
    targets = forward_kinematics(plan, wild, root_pos, quat)
    for n in range(1, 6):
        cfg = SolverConfig(n_iterations=n, position_tolerance=0, angle_tolerance=0)
        r = solve_frames(plan, targets, config=cfg)
        assert np.all(r.dof_value >= plan.lower) and np.all(r.dof_value <= plan.upper)
        assert np.all(r.iterations == n)
    assert r.limit_active.any()


def test_all_missing_frames_settle_at_neutral():
    plan = chain_plan(fixed_base=False)
    targets = np.full((3, plan.n_joints, 3), np.nan)
    for solve in (solve_frames, solve_sequence):
        r = solve(plan, targets)
        np.testing.assert_array_equal(r.dof_value, np.broadcast_to(plan.neutral, (3, 2)))
        np.testing.assert_array_equal(r.root_position, 0.0)
        np.testing.assert_array_equal(r.root_orientation, [[1, 0, 0, 0]] * 3)
        assert np.all(np.isnan(r.residual))
        np.testing.assert_array_equal(r.rms_error, 0.0)
        np.testing.assert_array_equal(r.observed, 0)


@pytest.mark.parametrize(
    "case", ["one_keypoint", "zero_weights", "coincident", "huge", "inf_target", "collinear"]
)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_degenerate_inputs_never_give_nan(rng, case, dtype):
    plan = random_plan(rng, n_joints=6, kinds=True, fixed_base=False)
    q, root_pos, quat = random_pose(plan, rng, n=4)
    targets = forward_kinematics(plan, q, root_pos, quat)
    weights = np.ones(targets.shape[:2])
    if case == "one_keypoint":
        targets[:, 1:] = np.nan
    elif case == "zero_weights":
        weights[:] = 0.0
    elif case == "coincident":
        targets[:] = 1.0
    elif case == "huge":
        targets *= 1e12
    elif case == "inf_target":
        targets[:, 2] = np.inf
    elif case == "collinear":
        targets = np.zeros_like(targets)
        targets[..., 0] = np.arange(plan.n_joints)
    for solve in (solve_frames, solve_sequence):
        r = solve(plan, targets, weights, config=SolverConfig(dtype=dtype))
        for name in (
            "dof_value",
            "root_position",
            "root_orientation",
            "joint_rotation",
            "fitted_position",
            "rms_error",
            "max_error",
        ):
            assert np.all(np.isfinite(getattr(r, name))), name
        # limits in the solve's own precision
        lo, hi = plan.lower.astype(dtype), plan.upper.astype(dtype)
        assert np.all(r.dof_value >= lo) and np.all(r.dof_value <= hi)


def test_joint_weight_scaler_zero_matches_missing_observation(rng):
    from pipeline.bodyplan import body_plan_to_dict, load_body_plan

    plan = random_plan(rng, n_joints=6)
    data = body_plan_to_dict(plan)
    data["joints"][3]["weight_scaler"] = 0.0
    scaled = load_body_plan(data)
    q, root_pos, quat = random_pose(plan, rng, n=3)
    targets = forward_kinematics(plan, q, root_pos, quat) + rng.normal(
        0, 0.05, (3, plan.n_joints, 3)
    )
    missing = targets.copy()
    missing[:, 3] = np.nan
    a = solve_frames(scaled, targets)
    b = solve_frames(plan, missing)
    np.testing.assert_allclose(a.dof_value, b.dof_value, atol=1e-12)


def test_weights_zero_or_nan_mean_missing(rng):
    plan = random_plan(rng, n_joints=6)
    q, root_pos, quat = random_pose(plan, rng, n=3)
    targets = forward_kinematics(plan, q, root_pos, quat) + rng.normal(
        0, 0.05, (3, plan.n_joints, 3)
    )
    w = rng.uniform(0.5, 1.0, size=(3, plan.n_joints))
    w_nan, w_zero, t_nan = w.copy(), w.copy(), targets.copy()
    w_nan[:, 2], w_zero[:, 2], t_nan[:, 2] = np.nan, 0.0, np.nan
    a = solve_frames(plan, targets, w_nan)
    b = solve_frames(plan, targets, w_zero)
    c = solve_frames(plan, t_nan, w)
    np.testing.assert_allclose(a.dof_value, b.dof_value, atol=1e-12)
    np.testing.assert_allclose(a.dof_value, c.dof_value, atol=1e-12)
    assert np.all(np.isnan(a.residual[:, 2]))


def test_min_confidence_turns_low_weights_into_missing(rng):
    plan = random_plan(rng, n_joints=6)
    q, root_pos, quat = random_pose(plan, rng, n=2)
    targets = forward_kinematics(plan, q, root_pos, quat)
    w = np.ones(targets.shape[:2])
    w[:, 4] = 0.2
    r = solve_frames(plan, targets, w, config=SolverConfig(min_confidence=0.5))
    assert np.all(np.isnan(r.residual[:, 4]))
    np.testing.assert_array_equal(r.observed, plan.n_joints - 1)


def gradient_norm(plan, r, targets, neutral_weight):
    """Norm of the objective's gradient at the solution (0 at a stationary point)."""
    jac = jacobian(plan, r.dof_value, r.root_position, r.root_orientation)
    res = np.nan_to_num(targets - r.fitted_position)
    g = np.einsum("tjkc,tjk->tc", jac, res)
    n_root = 0 if plan.fixed_base else 6
    g[:, n_root:] -= neutral_weight * (r.dof_value - plan.neutral)
    return np.linalg.norm(g, axis=1)


def test_lm_converges_to_a_stationary_point_where_gn_may_not(rng):
    """Unreachable, noisy targets: LM never ends above GN and ends at zero gradient."""
    plan = random_plan(rng, n_joints=10, fixed_base=False)
    q, root_pos, quat = random_pose(plan, rng, n=40, scale=1.5)
    targets = forward_kinematics(plan, q, root_pos, quat)
    targets += rng.normal(scale=0.4, size=targets.shape)  # large residuals
    nw = 1e-3
    gn = solve_frames(plan, targets, config=SolverConfig.quickik(neutral_weight=nw))
    # LM continues from GN's answer: it can only go down, and it ends where GN should have
    lm = solve_frames(
        plan,
        targets,
        initial=gn,
        config=SolverConfig.quickik(
            neutral_weight=nw,
            mode="lm",
            n_iterations=1000,
            position_tolerance=1e-10,
            angle_tolerance=1e-10,
        ),
    )

    def cost(r):
        res = np.nansum((targets - r.fitted_position) ** 2, axis=(1, 2))
        return res + nw * np.sum((r.dof_value - plan.neutral) ** 2, axis=1)

    assert np.all(cost(lm) <= cost(gn) + 1e-9)
    assert not gn.converged.all()  # plain GN stalls on some of these frames ...
    assert np.max(gradient_norm(plan, lm, targets, nw)) < 5e-5  # ... LM reaches the optimum
    assert lm.converged.all()
    assert np.median(gradient_norm(plan, gn, targets, nw)) > 1e-3
    print("GN cost / LM cost, worst frame:", np.max(cost(gn) / cost(lm)))


def test_robust_losses_resist_outliers(rng):
    plan = random_plan(rng, n_joints=10, fixed_base=False)
    q, root_pos, quat = random_pose(plan, rng, n=30, scale=0.5)
    clean = forward_kinematics(plan, q, root_pos, quat)
    targets = clean + rng.normal(scale=0.005, size=clean.shape)
    bad = rng.random(size=clean.shape[:2]) < 0.1
    targets[bad] += rng.normal(scale=2.0, size=(bad.sum(), 3))  # gross outliers
    errs = {}
    for loss in ("l2", "huber", "cauchy"):
        cfg = SolverConfig(loss=loss, loss_scale=0.05, mode="lm", n_iterations=50)
        r = solve_frames(plan, targets, config=cfg)
        errs[loss] = np.median(np.linalg.norm(r.fitted_position - clean, axis=-1)[~bad])
    assert errs["huber"] < 0.5 * errs["l2"]
    assert errs["cauchy"] < 0.5 * errs["l2"]


def test_sequence_equals_frames_when_converged_tightly(rng):
    plan = random_plan(rng, n_joints=6, fixed_base=False)
    t = np.linspace(0, 1, 50)[:, None]
    q = plan.neutral + 0.3 * np.sin(2 * np.pi * t + np.arange(plan.n_dofs))
    targets = forward_kinematics(plan, q, np.zeros(3))
    cfg = SolverConfig(
        neutral_weight=0.0,
        n_iterations=100,
        position_tolerance=1e-12,
        angle_tolerance=1e-12,
        lanes=4,
        warmup_frames=3,
    )
    r = solve_sequence(plan, targets, config=cfg)
    np.testing.assert_allclose(r.fitted_position, targets, atol=1e-6)
    assert r.iterations[5:].mean() < solve_frames(plan, targets, config=cfg).iterations.mean()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"targets": np.zeros((5, 3, 3))}, r"targets have shape \(5, 3, 3\); expected \(T, 4, 3\)"),
        ({"weights": np.ones((5, 2))}, r"weights have shape \(5, 2\); expected \(T, 4\)"),
        ({"weights": -np.ones((5, 4))}, "weights must be >= 0"),
        ({"mapper": "xy"}, "mapper must be None"),
    ],
)
def test_bad_inputs_name_the_problem(kwargs, message):
    plan = chain_plan()
    args = {"targets": np.zeros((5, 4, 3)), "weights": None} | kwargs
    with pytest.raises((ValueError, TypeError), match=message):
        solve_frames(plan, **args)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("mode", "newton", "mode: 'newton' is not one of gn, lm"),
        ("loss", "l1", "loss: 'l1' is not one of l2, huber, cauchy"),
        ("n_iterations", 0, "n_iterations: must be a positive integer"),
        ("damping", -1.0, "damping: must be a finite number >= 0"),
        ("neutral_weight", float("nan"), "neutral_weight: must be a finite number"),
        ("dtype", "float16", "dtype: 'float16' is not one of float64, float32"),
        ("loss_scale", 0.0, "loss_scale: must be > 0"),
        ("tolerance_on", "update", "tolerance_on: 'update' is not one of step, distance"),
    ],
)
def test_bad_solver_config_names_the_field(field, value, message):
    with pytest.raises(ConfigError, match=message):
        SolverConfig(**{field: value})


def test_solver_config_round_trips_through_a_dict():
    cfg = SolverConfig(mode="lm", loss="huber", dtype="float32")
    assert SolverConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ConfigError, match="unknown solver setting.*nope.*valid:"):
        SolverConfig.from_dict({"nope": 1})


def test_unbounded_hinges_do_not_wind_up_over_a_sequence():
    """A joint spinning five whole turns: same poses, angles kept near neutral +- pi."""
    plan = chain_plan(fixed_base=True)
    n = 400
    spin = np.linspace(0, 5 * 2 * np.pi, n)
    q = np.column_stack([spin, 0.3 * np.sin(spin)])
    targets = forward_kinematics(plan, q)
    cfg = SolverConfig(
        neutral_weight=0.0, position_tolerance=1e-9, angle_tolerance=1e-9, n_iterations=30
    )
    r = solve_sequence(plan, targets, config=cfg)
    np.testing.assert_allclose(r.fitted_position, targets, atol=1e-7)
    assert np.abs(r.dof_value - plan.neutral).max() < np.pi + 0.2
