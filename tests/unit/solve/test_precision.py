"""Per-frame uncertainty in the compiled kernel, the opt-out, and batched sequences.

References: a dense ``numpy.linalg.inv`` of ``J^T W J + P`` built from explicit Jacobian
rows (:func:`pipeline.kinematics.jacobian`) at the kernel's own solutions; the numpy
engine's evidence (:func:`pipeline.solve.temporal.uncertainty.frame_moments`); and
:func:`solve_sequence` on each sequence alone.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from pipeline.bodyplan import load_body_plan
from pipeline.errors import ConfigError, ObservationError
from pipeline.kinematics import forward_kinematics, jacobian
from pipeline.solve import SolverConfig, solve_frames, solve_sequence, solve_sequences
from pipeline.solve.compiled.precision import REGULARIZE
from pipeline.solve.dispatch import prepare_problem, run_compiled
from pipeline.solve.temporal.uncertainty import (
    frame_moments,
    frame_uncertainty,
    structural_observable,
)
from tests.fixtures.plan_factory import random_plan, random_pose
from tests.fixtures.shared_data import SHARED
from tests.unit.solve.test_defaults_converge import g1  # noqa: F401  (a fixture)

QUICKIK = SHARED / "data" / "quickik"


@pytest.fixture(scope="module")
def quickik_fly():
    """The NeuroMechFly legs and their 300 real frames at 330 Hz (mm), one row per joint."""
    plan = load_body_plan(QUICKIK / "neuromechfly_ypr_legs.json")
    raw = json.loads((QUICKIK / "fixtures.json").read_text())
    rows = [plan.joint_names.index(n) for n in raw["leg_joint_names"]]
    native = np.full((len(raw["native_rate_frames"]), plan.n_joints, 3), np.nan)
    native[:, rows] = [f["target_ego"] for f in raw["native_rate_frames"]]
    return plan, native


def _noisy(seed: int, n: int = 6):
    rng = np.random.default_rng(seed)
    plan = random_plan(rng, n_joints=9, kinds=True, fixed_base=seed % 3 == 0)
    q, rp, rq = random_pose(plan, rng, n=n)
    targets = forward_kinematics(plan, q, rp, rq) + 0.05 * rng.normal(size=(n, plan.n_joints, 3))
    targets[:, 3] = np.nan
    return plan, targets, rng.uniform(0.2, 1.0, size=(n, plan.n_joints))


@pytest.mark.parametrize("seed", range(8))
def test_kernel_inverse_diagonal_equals_a_dense_inverse(seed):
    plan, targets, weights = _noisy(seed)
    prob, compiled = prepare_problem(plan, targets, weights, SolverConfig(loss="huber"), None)
    assert compiled
    result, moments = run_compiled(prob, None, chained=False)
    q, rp, rq = result.dof_value, result.root_position, result.root_orientation
    jac = jacobian(plan, q, *((None, None) if plan.fixed_base else (rp, rq)))
    n_root = 0 if plan.fixed_base else 6
    # robust (IRLS) weights at the solution, as the kernel applies them
    r = np.linalg.norm(np.nan_to_num(targets - result.fitted_position), axis=-1)
    scale = prob.config.loss_scale
    w = prob.weight[:, 0] * np.where(r <= scale, 1.0, scale / np.maximum(r, 1e-300))
    for s in range(len(targets)):
        js = jac[s].reshape(-1, jac.shape[-1])
        a = js.T @ (np.repeat(w[s], 3)[:, None] * js)
        np.testing.assert_allclose(moments.information[s], np.diag(a), rtol=1e-9, atol=1e-12)
        a[n_root:, n_root:] += np.diag(prob.neutral_weight * plan.dof_weight_scalers)
        a[np.diag_indices_from(a)] *= 1.0 + REGULARIZE  # the kernel's documented ridge
        dense = np.diag(np.linalg.inv(a))
        np.testing.assert_allclose(moments.inverse[s], dense, rtol=1e-8)


def test_kernel_moments_equal_the_numpy_evidence_on_the_fly(quickik_fly):
    plan, native = quickik_fly
    targets = native.copy()
    targets[100:130, 5:9] = np.nan  # a gap on one leg
    prob, _ = prepare_problem(plan, targets, None, SolverConfig(), None)
    result, moments = run_compiled(prob, None, chained=True)
    ref = frame_moments(prob, result)
    for name, a, b in zip(moments._fields, moments, ref, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-14, err_msg=name)
    std, observable = frame_uncertainty(prob, moments)
    std_ref, observable_ref = frame_uncertainty(prob, ref)
    np.testing.assert_allclose(std, std_ref, rtol=1e-9)
    np.testing.assert_array_equal(observable, observable_ref)
    assert not observable[100:130].all() and observable[:100].all()


def test_uncertainty_off_keeps_the_fit_and_reports_structural_observability(quickik_fly):
    plan, native = quickik_fly
    targets = native.copy()
    targets[100:130, 5:9] = np.nan
    on = solve_sequence(plan, targets)
    off = solve_sequence(plan, targets, config=SolverConfig(uncertainty=False))
    np.testing.assert_array_equal(on.dof_value, off.dof_value)
    np.testing.assert_array_equal(on.stop_reason, off.stop_reason)
    assert np.isnan(off.dof_std).all() and np.isnan(off.root_position_std).all()
    assert np.isfinite(on.dof_std).all()
    # on the fly no observed keypoint sits on a DOF axis: the two notions agree
    np.testing.assert_array_equal(off.dof_observable, on.dof_observable)
    assert SolverConfig.quickik().uncertainty is False


def test_the_g1_ankle_rolls_are_flagged_with_and_without_uncertainty(g1):  # noqa: F811
    plan, _, native = g1
    rolls = [plan.dof_names.index(n) for n in plan.dof_names if "ankle_roll" in n]
    assert len(rolls) == 2
    for config in (SolverConfig(), SolverConfig(uncertainty=False)):
        r = solve_sequence(plan, native[:40], config=config)
        assert not r.dof_observable[:, rolls].any()
        others = np.delete(r.dof_observable, rolls, axis=1)
        assert others.all()
    prob, _ = prepare_problem(plan, native[:40], None, SolverConfig(), None)
    assert not structural_observable(prob)[:, 6 + np.array(rolls)].any()


@pytest.mark.parametrize(
    ("config", "fps"),
    [
        (SolverConfig(), None),
        (SolverConfig(loss="huber", warm_start="velocity"), None),
        (SolverConfig(temporal="smooth"), 330.0),
    ],
)
def test_solve_sequences_equals_each_sequence_alone(quickik_fly, config, fps):
    plan, native = quickik_fly
    n = 3 if fps is None else 1  # the smoother is the slow part: shorter sequences
    seqs = [native[: 40 * n], native[100 : 100 + 60 * n][::-1].copy(), native[: 20 * n] + 0.1]
    seqs[1][10:30, 3:8] = np.nan
    weights = [None, np.full(seqs[1].shape[:2], 0.5), None]
    many = solve_sequences(plan, seqs, weights, config=config, fps=fps)
    assert [len(r) for r in many] == [40 * n, 60 * n, 20 * n]
    for s, w, got in zip(seqs, weights, many, strict=True):
        alone = solve_sequence(plan, s, w, config=config, fps=fps)
        for name in ("dof_value", "root_orientation", "dof_std", "dof_velocity", "objective"):
            np.testing.assert_array_equal(getattr(got, name), getattr(alone, name), name)
        np.testing.assert_array_equal(got.stop_reason, alone.stop_reason)
        np.testing.assert_array_equal(got.dof_observable, alone.dof_observable)


def test_solve_sequences_names_a_weights_count_mismatch(quickik_fly):
    plan, native = quickik_fly
    with pytest.raises(ObservationError, match="weights: 1 arrays for 2 sequences"):
        solve_sequences(plan, [native[:10], native[:10]], [None])


def test_solve_frames_keeps_the_moments_of_the_kept_restart(g1):  # noqa: F811
    plan, real, _ = g1
    r = solve_frames(plan, real, config=SolverConfig(restarts=2))
    prob, _ = prepare_problem(plan, real, None, SolverConfig(restarts=2), None)
    std, _ = frame_uncertainty(prob, frame_moments(prob, r))
    np.testing.assert_allclose(r.dof_std, std[:, 6:], rtol=1e-6)


@pytest.mark.parametrize("loss", ["l2", "cauchy"])
def test_projection_kernel_moments_equal_the_numpy_evidence(fly_plan_path, loss):
    """Multi-view pixels: the projection kernel's uncertainty inputs, as for 3D."""
    from pipeline.solve.mappers import CalibratedCameras
    from pipeline.synth import SynthConfig, synthesize
    from pipeline.synth.camera_views import ViewsConfig, render_views
    from tests.fixtures.multiview_rig import fly_rig

    plan, cams = load_body_plan(fly_plan_path), fly_rig(4)
    s = synthesize(plan, SynthConfig(n_frames=30, unit="mm"), np.random.default_rng(0))
    points = s.truth["position"].values[..., 0].transpose(0, 2, 1)
    pix, conf = render_views(points, cams, ViewsConfig(), np.random.default_rng(1))
    config = SolverConfig(loss=loss, loss_scale=5.0)
    prob, compiled = prepare_problem(plan, pix, conf, config, CalibratedCameras(cams))
    assert compiled
    result, moments = run_compiled(prob, None, chained=True)
    ref = frame_moments(prob, result)
    for name, a, b in zip(moments._fields, moments, ref, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-12, err_msg=name)
    off = SolverConfig(loss=loss, loss_scale=5.0, uncertainty=False)
    prob_off, _ = prepare_problem(plan, pix, conf, off, CalibratedCameras(cams))
    assert run_compiled(prob_off, None, True)[1] is None


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_uncertainty_must_be_a_bool(value):
    with pytest.raises(ConfigError, match="SolverConfig.uncertainty: must be true or false"):
        SolverConfig(uncertainty=value)


def test_solve_sequences_names_a_malformed_sequence(quickik_fly):
    plan, native = quickik_fly
    with pytest.raises(ObservationError, match=r"targets\[1\] has shape \(10, 31, 2\)"):
        solve_sequences(plan, [native[:10], native[:10, :, :2]])
    with pytest.raises(ObservationError, match=r"weights\[0\] has shape \(10,\)"):
        solve_sequences(plan, [native[:10], native[:10]], [np.ones(10), None])


def test_structural_observability_is_the_tree_walk_on_every_tree_in_turn():
    """The cached ``below`` structure (keyed on the tree) answers for each tree, not the last.

    Reference: a DOF is observable when an observed keypoint's joint has the DOF's joint
    as a strict ancestor, walked up ``parent_indices`` one frame at a time.
    """
    rng = np.random.default_rng(33)
    plans = [
        random_plan(rng, n_joints=5, fixed_base=False),
        random_plan(rng, n_joints=9, fixed_base=True),
        random_plan(rng, n_joints=7, fixed_base=False),
    ]
    for plan in plans * 2:  # alternate: a stale cache entry would answer for another tree
        parent = plan.parent_indices
        targets = np.array(forward_kinematics(plan, *random_pose(plan, rng, n=4)))  # (4, J, 3)
        targets[1, rng.integers(plan.n_joints)] = np.nan
        targets[2] = np.nan
        targets[3, : plan.n_joints // 2] = np.nan
        prob, _ = prepare_problem(plan, targets, None, SolverConfig(), None)
        got = structural_observable(prob)
        seen = np.isfinite(targets).all(-1)
        want = np.zeros((4, plan.n_dofs), bool)
        for d, owner in enumerate(plan.dof_joint):
            for j in np.flatnonzero(seen.any(0)):
                up = parent[j]
                while up >= 0 and up != owner:
                    up = parent[up]
                if up == owner:
                    want[:, d] |= seen[:, j]
        np.testing.assert_array_equal(got[:, prob.model.n_root :], want)
        root = got[:, : prob.model.n_root]
        assert root.shape[1] == 0 or (root == seen.any(1)[:, None]).all()
