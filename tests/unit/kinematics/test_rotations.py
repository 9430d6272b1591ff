"""Rotation helpers: conversions, exp/log, left Jacobian, swing-twist."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.kinematics.rotations import (
    expmap,
    left_jacobian,
    logmap,
    matrix_to_quat,
    orthonormal_basis,
    quat_multiply,
    quat_normalize,
    quat_to_matrix,
    quat_to_rotvec,
    rotvec_to_quat,
    swing_twist,
)


def same_rotation(q1, q2, atol=1e-10):
    """Quaternions equal up to sign."""
    dot = np.abs(np.sum(q1 * q2, axis=-1))
    np.testing.assert_allclose(dot, 1.0, atol=atol)


def random_quats(rng, n):
    return quat_normalize(rng.normal(size=(n, 4)))


def test_matrix_quaternion_round_trip(rng):
    q = random_quats(rng, 200)
    same_rotation(matrix_to_quat(quat_to_matrix(q)), q)


def test_rotvec_round_trip_including_small_angles(rng):
    v = rng.normal(size=(100, 3))
    v *= rng.uniform(0, 3.0, size=(100, 1)) / np.linalg.norm(v, axis=1, keepdims=True)
    v[:5] *= 1e-10
    np.testing.assert_allclose(quat_to_rotvec(rotvec_to_quat(v)), v, atol=1e-9)
    np.testing.assert_allclose(logmap(expmap(v)), v, atol=1e-8)
    np.testing.assert_allclose(quat_to_matrix(rotvec_to_quat(v)), expmap(v), atol=1e-12)


def test_left_jacobian_matches_finite_differences(rng):
    phi = rng.normal(size=3)
    jl = left_jacobian(phi)
    eps = 1e-6
    for k in range(3):
        d = np.zeros(3)
        d[k] = eps
        # exp(phi + d) exp(phi)^T ~= exp(J_l d)
        delta = expmap(phi + d) @ expmap(phi).T
        omega = logmap(delta) / eps
        np.testing.assert_allclose(omega, jl[:, k], atol=1e-6)


def test_orthonormal_basis_is_right_handed(rng):
    for a in [*np.eye(3), *-np.eye(3), *rng.normal(size=(20, 3))]:
        a = a / np.linalg.norm(a)
        b1, b2 = orthonormal_basis(a)
        frame = np.stack([a, b1, b2], axis=1)
        np.testing.assert_allclose(frame.T @ frame, np.eye(3), atol=1e-12)
        assert np.linalg.det(frame) > 0
    b1, b2 = orthonormal_basis(np.array([1.0, 0, 0]))
    np.testing.assert_allclose([b1, b2], [[0, 1, 0], [0, 0, 1]], atol=1e-15)


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_swing_twist_recomposes(seed):
    rng = np.random.default_rng(seed)
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    q = random_quats(rng, 8)
    swing, twist = swing_twist(q, axis)
    same_rotation(quat_multiply(swing, twist), q)
    # twist is about the axis, swing about an axis orthogonal to it
    np.testing.assert_allclose(np.cross(twist[:, 1:], axis), 0.0, atol=1e-12)
    np.testing.assert_allclose(swing[:, 1:] @ axis, 0.0, atol=1e-12)


def test_swing_twist_near_180_degree_swing(rng):
    axis = np.array([0.0, 0.0, 1.0])
    b1, _ = orthonormal_basis(axis)
    for gap in (1e-3, 1e-6, 1e-9, 0.0):
        swing = rotvec_to_quat(b1 * (np.pi - gap))
        twist = rotvec_to_quat(axis * 0.7)
        q = quat_multiply(swing, twist)
        s, t = swing_twist(q, axis)
        assert np.all(np.isfinite(s)) and np.all(np.isfinite(t))
        same_rotation(quat_multiply(s, t), q, atol=1e-9)
