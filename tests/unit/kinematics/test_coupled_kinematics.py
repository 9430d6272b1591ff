"""Coupled plans: forward kinematics against a direct composition, Jacobians against
central finite differences, at seeded random coordinates."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from pipeline.bodyplan import load_body_plan
from pipeline.bodyplan.functions import evaluate
from pipeline.bodyplan.model import DrivenAxis
from pipeline.kinematics import forward_kinematics, jacobian
from pipeline.kinematics.fk_jacobian import joint_rotations_local
from pipeline.kinematics.rotations import quat_to_matrix
from tests.unit.bodyplan.coupled_samples import coupled

from .test_jacobian_properties import numeric_jacobian


def _coordinates(plan, q: np.ndarray) -> dict[str, float]:
    values = dict(zip(plan.dof_names, map(float, q), strict=True))
    for c in plan.couplings:
        values[c.name] = float(evaluate(c.function, values[c.coordinate])[0])
    return values


def _direct(plan, q, root_pos, root_quat) -> np.ndarray:
    """Each joint's keypoint by composing its axes one by one (no compiled model)."""
    values = _coordinates(plan, q)
    frames: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    out = np.zeros((plan.n_joints, 3))
    names = iter(plan.dof_names)
    for i, joint in enumerate(plan.joints):
        if joint.parent is None:
            rot, org = quat_to_matrix(np.asarray(root_quat)), np.asarray(root_pos, float)
        else:
            rot, org = frames[joint.parent]
        org = org + rot @ np.asarray(joint.offset_pos)
        rot = rot @ quat_to_matrix(np.asarray(joint.offset_quat))
        out[i] = org
        for axis in joint.axes:
            if isinstance(axis, DrivenAxis):
                v = float(evaluate(axis.function, values[axis.coordinate])[0])
            else:
                v = values[next(names)]
            u = np.asarray(axis.axis)
            if axis.type == "slide":
                org = org + rot @ u * v
            else:
                rot = rot @ Rotation.from_rotvec(u * v).as_matrix()
        frames[joint.name] = (rot, org)
    return out


def _pose(plan, rng, n):
    q = rng.uniform(-1.9, 0.15, (n, plan.n_dofs))  # across the knee's range and its knots
    root_pos = rng.normal(size=(n, 3))
    root_quat = rng.normal(size=(n, 4))
    root_quat /= np.linalg.norm(root_quat, axis=1, keepdims=True)
    return q, root_pos, root_quat


def test_forward_kinematics_equals_direct_composition(rng):
    plan = load_body_plan(coupled())
    q, rp, rq = _pose(plan, rng, 20)
    got = forward_kinematics(plan, q, rp, rq)
    for k in range(len(q)):
        np.testing.assert_allclose(got[k], _direct(plan, q[k], rp[k], rq[k]), atol=1e-14)
    # the patella follows the knee through the coupling, and the tibia slides
    moved = forward_kinematics(plan, q + [0.0, 0.3], rp, rq) - got
    assert np.abs(moved[:, plan.joint_index("patella_tip")]).max() > 1e-3


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_jacobian_equals_central_differences(rng, dtype):
    plan = load_body_plan(coupled())
    q, rp, rq = _pose(plan, rng, 6)
    analytic = jacobian(plan, q.astype(dtype), rp.astype(dtype), rq.astype(dtype))
    assert analytic.dtype == dtype
    numeric = numeric_jacobian(plan, q, rp, rq)
    tol = 2e-7 if dtype == np.float64 else 2e-4
    np.testing.assert_allclose(analytic, numeric, atol=tol, rtol=tol)
    knee = plan.dof_names.index("knee")
    tip = plan.joint_index("patella_tip")
    assert np.abs(analytic[:, tip, :, 6 + knee]).max() > 1e-3  # through the coupling


def test_fixed_base_and_local_rotations(rng):
    data = coupled()
    data["fixed_base"] = True
    plan = load_body_plan(data)
    q, _, _ = _pose(plan, rng, 4)
    origin, identity = np.zeros((4, 3)), np.tile([1.0, 0, 0, 0], (4, 1))
    np.testing.assert_allclose(
        jacobian(plan, q), numeric_jacobian(plan, q, origin, identity), atol=2e-7, rtol=1e-6
    )
    local = joint_rotations_local(plan, q)
    knee = plan.joint_index("knee")
    for k in range(len(q)):
        beta = _coordinates(plan, q[k])["beta"]
        want = Rotation.from_rotvec([0, 0, q[k, 1]]) * Rotation.from_rotvec(
            [float(evaluate(plan.joints[knee].driven[2].function, beta)[0]), 0, 0]
        )
        got = Rotation.from_quat(local[k, knee][[1, 2, 3, 0]])
        assert (got.inv() * want).magnitude() < 1e-12
