"""The compiled engine on coupled plans (OpenSim's knees, patellae and couplers) and with
coordinate tasks: forward kinematics equal to the numpy engine's, normal equations equal
to central finite differences of the forward kinematics, fits equal to the numpy engine's.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest

from pipeline.bodyplan import load_body_plan
from pipeline.kinematics import forward_kinematics
from pipeline.kinematics.fk_jacobian import joint_rotations_local
from pipeline.kinematics.step_groups import compiled_refusal
from pipeline.solve import CoordinateTasks, SolverConfig, solve_frames, solve_sequence
from pipeline.solve.problem import prepare
from tests.unit.bodyplan.coupled_samples import coupled
from tests.unit.bodyplan.importers.models import OSIM

TIGHT = SolverConfig(
    neutral_weight=0.0,
    position_tolerance=1e-12,
    angle_tolerance=1e-12,
    cost_tolerance=0.0,
    n_iterations=100,
    uncertainty=False,
)


def _import(name: str):
    pytest.importorskip("opensim")
    from pipeline.bodyplan.importers.osim import import_osim

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return import_osim(OSIM / name)


@pytest.fixture(scope="module", params=["gait2392_thelen2003muscle.osim", "Rajagopal2016.osim"])
def plan(request):
    return _import(request.param)


@pytest.fixture(scope="module")
def sample():
    return load_body_plan(coupled())


def _poses(plan, rng, n, spread=1.0):
    """Poses inside the limits (``spread < 1``: the middle of the ranges, within 0.6)."""
    lo = np.where(np.isfinite(plan.lower), plan.lower, -1.0)
    hi = np.where(np.isfinite(plan.upper), plan.upper, 1.0)
    if spread < 1.0:
        mid, half = (lo + hi) / 2, np.minimum(spread * (hi - lo) / 2, 0.6)
        lo, hi = mid - half, mid + half
    return rng.uniform(lo, hi, (n, plan.n_dofs))


def _evaluate(plan, q, rp=None, rq=None):
    from pipeline.solve.compiled import evaluate_compiled

    n = q.shape[0]
    prob = prepare(plan, np.zeros((n, plan.n_joints, 3)), None, TIGHT, None, np.float64)
    rp = np.zeros((n, 3)) if rp is None else rp
    rq = np.tile([1.0, 0.0, 0.0, 0.0], (n, 1)) if rq is None else rq
    return evaluate_compiled(prob, q, rp, rq)


def test_the_osim_plans_take_the_compiled_engine(plan, sample):
    assert plan.coupled and compiled_refusal(plan) is None
    assert compiled_refusal(sample) is None


def test_forward_kinematics_equal_the_numpy_engine(plan, rng):
    q = _poses(plan, rng, 6)
    out = _evaluate(plan, q)
    np.testing.assert_allclose(out.fitted_position, forward_kinematics(plan, q), atol=1e-13)
    want = joint_rotations_local(plan, q)
    np.testing.assert_allclose(out.joint_rotation, want, atol=1e-13)


def _kernel_normal(plan, q, rp, rq, target, weight):
    """The compiled kernel's assembled normal matrix (dense) and gradient at one pose."""
    from pipeline.solve.compiled.bundles import workspace
    from pipeline.solve.compiled.forward import fk
    from pipeline.solve.compiled.normal import assemble
    from pipeline.solve.compiled.so3 import quat_to_matrix
    from pipeline.solve.compiled.tables import tables

    tb = tables(plan)
    ws = workspace(tb)
    quat_to_matrix(rq, ws.root_rot)
    fk(tb, q, rp, ws.root_rot, True, ws.rot, ws.org, ws.pos, ws.axes, ws.pivots, ws.tmp, ws.half)
    res = np.where(np.isfinite(target), target - ws.pos, 0.0)
    w = np.where(np.isfinite(target[:, 0]), weight, 0.0)
    assemble(tb, ws.pos, ws.axes, ws.pivots, rp, res, w, ws.mom, ws.xi, ws.hd, ws.hc,
             ws.hr, ws.g)  # fmt: skip
    ns = tb.n_root + plan.n_dofs
    h = np.diag(ws.hd.copy())
    for s in range(ns):
        for m in range(tb.local_depth[s]):
            h[s, tb.ancestors[s, m]] = h[tb.ancestors[s, m], s] = ws.hc[s, m]
        for c in range(min(s, tb.n_root) if s < tb.n_root else tb.n_root):
            h[s, c] = h[c, s] = ws.hr[s, c]
    return h, ws.g.copy(), res, w


def _numeric_jacobian(plan, q, rp, rq, eps=1e-6):
    """Central differences of the keypoints: root position, world rotation increment, DOFs."""
    from scipy.spatial.transform import Rotation

    def fk(qq, pp, quat):
        return forward_kinematics(plan, qq, pp, quat)

    cols = []
    if not plan.fixed_base:
        for i in range(3):
            d = np.zeros(3)
            d[i] = eps
            cols.append((fk(q, rp + d, rq) - fk(q, rp - d, rq)) / (2 * eps))
        base = Rotation.from_quat(rq[[1, 2, 3, 0]])
        for i in range(3):
            d = np.zeros(3)
            d[i] = eps
            plus = (Rotation.from_rotvec(d) * base).as_quat()[[3, 0, 1, 2]]
            minus = (Rotation.from_rotvec(-d) * base).as_quat()[[3, 0, 1, 2]]
            cols.append((fk(q, rp, plus) - fk(q, rp, minus)) / (2 * eps))
    for k in range(plan.n_dofs):
        d = np.zeros(plan.n_dofs)
        d[k] = eps
        cols.append((fk(q + d, rp, rq) - fk(q - d, rp, rq)) / (2 * eps))
    return np.stack(cols, axis=-1)  # (J, 3, n_state)


@pytest.mark.parametrize("which", ["osim", "sample"])
def test_normal_equations_equal_finite_differences(which, plan, sample, rng):
    p = plan if which == "osim" else sample
    q = _poses(p, rng, 1)[0]
    rp = rng.normal(0.0, 0.3, 3)
    rq = rng.normal(size=4)
    rq /= np.linalg.norm(rq)
    if p.fixed_base:
        rp, rq = np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0])
    target = forward_kinematics(p, q, rp, rq) + rng.normal(0.0, 0.02, (p.n_joints, 3))
    target[::5] = np.nan
    weight = rng.uniform(0.2, 2.0, p.n_joints)
    h, g, res, w = _kernel_normal(p, q, rp, rq, target, weight)
    jac = _numeric_jacobian(p, q, rp, rq).reshape(-1, h.shape[0])
    ww = np.repeat(w, 3)
    np.testing.assert_allclose(h, jac.T @ (ww[:, None] * jac), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(g, jac.T @ (ww * res.reshape(-1)), rtol=1e-6, atol=1e-7)


#: A weak prior makes every coordinate observable (some of Rajagopal's are not).
PRIOR = replace(TIGHT, neutral_weight=1e-4, n_iterations=200)


def _fit_both(plan, targets, **kw):
    out = {}
    for engine in ("numpy", "compiled"):
        out[engine] = solve_frames(plan, targets, config=replace(PRIOR, engine=engine), **kw)
    return out["numpy"], out["compiled"]


def test_fits_equal_the_numpy_engine_with_tasks_and_weights(plan, rng):
    q = _poses(plan, rng, 3, spread=0.3)
    targets = forward_kinematics(plan, q) + rng.normal(0.0, 0.005, (3, plan.n_joints, 3))
    kw = rng.uniform(0.5, 5.0, plan.n_joints)
    a, b = plan.dof_names[3], plan.dof_names[-1]
    tasks = CoordinateTasks({a: 2.0, b: 0.5}, {a: 0.1, b: np.array([0.0, 0.2, -0.1])})
    numpy_fit, compiled_fit = _fit_both(plan, targets, keypoint_weights=kw, coordinate_tasks=tasks)
    # (on noisy Rajagopal targets neither engine meets 1e-12 step tolerances in 200
    # iterations; both reach the same optimum)
    np.testing.assert_array_equal(compiled_fit.converged, numpy_fit.converged)
    np.testing.assert_allclose(compiled_fit.objective, numpy_fit.objective, rtol=1e-9)
    np.testing.assert_allclose(compiled_fit.dof_value, numpy_fit.dof_value, atol=1e-5)
    np.testing.assert_allclose(compiled_fit.fitted_position, numpy_fit.fitted_position, atol=1e-7)
    np.testing.assert_allclose(
        compiled_fit.fitted_position, forward_kinematics(plan, compiled_fit.dof_value), atol=1e-12
    )
    free = solve_frames(
        plan, targets, config=replace(TIGHT, engine="compiled"), keypoint_weights=kw
    )
    assert np.abs(free.dof_value - compiled_fit.dof_value).max() > 1e-4  # the tasks pull


def test_sequence_and_smoothing_on_the_compiled_engine(sample, rng):
    n = 12
    time = np.linspace(0.0, 1.0, n)
    q = np.column_stack([0.4 * np.sin(2 * time), -0.9 + 0.6 * np.cos(3 * time)])
    root = np.column_stack([0.1 * time, 0.05 * time, 0.02 * time])
    targets = forward_kinematics(sample, q, root)
    config = replace(TIGHT, engine="compiled", cold_root="origin")
    result = solve_sequence(sample, targets, config=config)
    # (the root's yaw and the hip's hinge turn about one axis: only positions are defined)
    np.testing.assert_allclose(result.fitted_position, targets, atol=1e-7)
    smooth = solve_sequence(sample, targets, config=replace(config, temporal="smooth"), fps=30)
    assert np.abs(smooth.fitted_position - targets).max() < 1e-2


def _tangled():
    """The sample with a DOF below the patella, which the knee angle also moves."""
    data = coupled()
    tip = next(j for j in data["joints"] if j["name"] == "patella_tip")
    tip["dofs"] = [
        {"name": "tip", "type": "hinge", "axis": [0, 0, 1], "neutral": 0.0, "limits": None}
    ]
    data["joints"].append(
        {"name": "tip_end", "parent": "patella_tip", "offset_pos": [0.0, 0.05, 0.0],
         "offset_quat": [1.0, 0.0, 0.0, 0.0], "dofs": []}
    )  # fmt: skip
    return load_body_plan(data)


def test_a_dof_below_a_driven_joint_fits_alike_on_both_engines(rng):
    # the tip's DOF goes under the knee in the elimination tree (.coupled_terms); the
    # refusal of a coupling no tree holds is in test_compiled_spine.py
    plan = _tangled()
    assert compiled_refusal(plan) is None
    q = rng.uniform(-0.3, 0.1, (3, plan.n_dofs))
    targets = forward_kinematics(plan, q)
    numpy_fit, compiled_fit = _fit_both(plan, targets)
    np.testing.assert_array_equal(compiled_fit.converged, numpy_fit.converged)
    np.testing.assert_allclose(compiled_fit.objective, numpy_fit.objective, rtol=1e-9, atol=1e-18)
    np.testing.assert_allclose(compiled_fit.dof_value, numpy_fit.dof_value, atol=1e-5)
    np.testing.assert_allclose(compiled_fit.fitted_position, numpy_fit.fitted_position, atol=1e-7)
    np.testing.assert_allclose(compiled_fit.fitted_position, targets, atol=1e-3)  # the prior
