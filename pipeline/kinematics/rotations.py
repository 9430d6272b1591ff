"""Batched rotations: quaternions (w, x, y, z), rotation vectors, matrices, swing-twist.

Every function broadcasts over leading axes and keeps the input's float dtype. Matrices
act on column vectors; quaternions are unit ``(w, x, y, z)``.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "axis_angle_matrix",
    "expmap",
    "left_jacobian",
    "logmap",
    "matrix_to_quat",
    "orthonormal_basis",
    "quat_conjugate",
    "quat_multiply",
    "quat_normalize",
    "quat_to_matrix",
    "rotvec_to_quat",
    "quat_to_rotvec",
    "skew",
    "swing_twist",
]

_SMALL = 1e-12


def skew(v: np.ndarray) -> np.ndarray:
    """Cross-product matrices ``[v]x`` with ``[v]x @ u == cross(v, u)``.

    Parameters
    ----------
    v : (..., 3) array

    Returns
    -------
    (..., 3, 3) array
    """
    v = np.asarray(v)
    z = np.zeros_like(v[..., 0])
    x, y, w = v[..., 0], v[..., 1], v[..., 2]
    return np.stack(
        [np.stack([z, -w, y], -1), np.stack([w, z, -x], -1), np.stack([-y, x, z], -1)], -2
    )


def axis_angle_matrix(axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """Rotation matrices about unit ``axis`` by ``angle`` (Rodrigues).

    Parameters
    ----------
    axis : (..., 3) array
        Unit axes.
    angle : (...) array
        Angles in radians.

    Returns
    -------
    (..., 3, 3) array
    """
    axis = np.asarray(axis)
    angle = np.asarray(angle)
    c = np.cos(angle)[..., None, None]
    s = np.sin(angle)[..., None, None]
    outer = axis[..., :, None] * axis[..., None, :]
    eye = np.eye(3, dtype=np.result_type(axis, angle))
    return c * eye + s * skew(axis) + (1.0 - c) * outer


def expmap(rotvec: np.ndarray) -> np.ndarray:
    """Rotation matrices of rotation vectors (axis times angle, rad).

    Parameters
    ----------
    rotvec : (..., 3) array

    Returns
    -------
    (..., 3, 3) array
    """
    rotvec = np.asarray(rotvec)
    theta2 = np.sum(rotvec * rotvec, axis=-1)
    theta = np.sqrt(theta2)
    small = theta2 < 1e-8
    safe = np.where(small, 1.0, theta)
    a = np.where(small, 1.0 - theta2 / 6.0, np.sin(safe) / safe)
    b = np.where(small, 0.5 - theta2 / 24.0, (1.0 - np.cos(safe)) / (safe * safe))
    k = skew(rotvec)
    eye = np.eye(3, dtype=rotvec.dtype)
    return eye + a[..., None, None] * k + b[..., None, None] * (k @ k)


def left_jacobian(rotvec: np.ndarray) -> np.ndarray:
    """Left Jacobian of SO(3): ``exp(phi + d) ~= exp(J_l(phi) d) exp(phi)``.

    Parameters
    ----------
    rotvec : (..., 3) array

    Returns
    -------
    (..., 3, 3) array
    """
    rotvec = np.asarray(rotvec)
    theta2 = np.sum(rotvec * rotvec, axis=-1)
    theta = np.sqrt(theta2)
    small = theta2 < 1e-6
    safe = np.where(small, 1.0, theta)
    b = np.where(small, 0.5 - theta2 / 24.0, (1.0 - np.cos(safe)) / (safe * safe))
    c = np.where(small, 1.0 / 6.0 - theta2 / 120.0, (safe - np.sin(safe)) / (safe**3))
    k = skew(rotvec)
    eye = np.eye(3, dtype=rotvec.dtype)
    return eye + b[..., None, None] * k + c[..., None, None] * (k @ k)


def quat_normalize(q: np.ndarray) -> np.ndarray:
    """Unit quaternions with non-negative ``w`` (canonical sign).

    Parameters
    ----------
    q : (..., 4) array, ``(w, x, y, z)``

    Returns
    -------
    (..., 4) array
    """
    q = np.asarray(q)
    n = np.linalg.norm(q, axis=-1, keepdims=True)
    q = q / np.where(n > 0, n, 1.0)
    return np.where(q[..., :1] < 0, -q, q)


def quat_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton products ``a * b`` (apply ``b`` first, then ``a``).

    Parameters
    ----------
    a, b : (..., 4) arrays, ``(w, x, y, z)``

    Returns
    -------
    (..., 4) array
    """
    aw, ax, ay, az = np.moveaxis(np.asarray(a), -1, 0)
    bw, bx, by, bz = np.moveaxis(np.asarray(b), -1, 0)
    return np.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        axis=-1,
    )


def quat_conjugate(q: np.ndarray) -> np.ndarray:
    """Conjugates (inverses of unit quaternions)."""
    q = np.asarray(q)
    return q * np.array([1.0, -1.0, -1.0, -1.0], dtype=q.dtype)


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrices of unit quaternions ``(w, x, y, z)``.

    Parameters
    ----------
    q : (..., 4) array

    Returns
    -------
    (..., 3, 3) array
    """
    w, x, y, z = np.moveaxis(np.asarray(q), -1, 0)
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        axis=-2,
    )


def matrix_to_quat(m: np.ndarray) -> np.ndarray:
    """Unit quaternions ``(w, x, y, z)``, ``w >= 0``, of rotation matrices.

    Uses the numerically stable branch (largest diagonal term) per element.

    Parameters
    ----------
    m : (..., 3, 3) array

    Returns
    -------
    (..., 4) array
    """
    m = np.asarray(m)
    m00, m11, m22 = m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]
    trace = m00 + m11 + m22
    cand = np.stack(
        [
            np.stack(
                [
                    1 + trace,
                    m[..., 2, 1] - m[..., 1, 2],
                    m[..., 0, 2] - m[..., 2, 0],
                    m[..., 1, 0] - m[..., 0, 1],
                ],
                -1,
            ),
            np.stack(
                [
                    m[..., 2, 1] - m[..., 1, 2],
                    1 + m00 - m11 - m22,
                    m[..., 0, 1] + m[..., 1, 0],
                    m[..., 0, 2] + m[..., 2, 0],
                ],
                -1,
            ),
            np.stack(
                [
                    m[..., 0, 2] - m[..., 2, 0],
                    m[..., 0, 1] + m[..., 1, 0],
                    1 - m00 + m11 - m22,
                    m[..., 1, 2] + m[..., 2, 1],
                ],
                -1,
            ),
            np.stack(
                [
                    m[..., 1, 0] - m[..., 0, 1],
                    m[..., 0, 2] + m[..., 2, 0],
                    m[..., 1, 2] + m[..., 2, 1],
                    1 - m00 - m11 + m22,
                ],
                -1,
            ),
        ],
        axis=-2,
    )  # (..., 4 candidates, 4)
    pick = np.argmax(np.stack([trace, m00, m11, m22], -1), axis=-1)
    q = np.take_along_axis(cand, pick[..., None, None], axis=-2)[..., 0, :]
    return quat_normalize(q)


def rotvec_to_quat(rotvec: np.ndarray) -> np.ndarray:
    """Unit quaternions of rotation vectors (rad).

    Parameters
    ----------
    rotvec : (..., 3) array

    Returns
    -------
    (..., 4) array
    """
    rotvec = np.asarray(rotvec)
    theta = np.linalg.norm(rotvec, axis=-1)
    half = 0.5 * theta
    small = theta < 1e-8
    k = np.where(small, 0.5 - theta * theta / 48.0, np.sin(half) / np.where(small, 1.0, theta))
    return np.concatenate([np.cos(half)[..., None], k[..., None] * rotvec], axis=-1)


def quat_to_rotvec(q: np.ndarray) -> np.ndarray:
    """Rotation vectors (angle in [0, pi]) of unit quaternions.

    Parameters
    ----------
    q : (..., 4) array

    Returns
    -------
    (..., 3) array
    """
    q = quat_normalize(q)
    w = np.clip(q[..., 0], -1.0, 1.0)
    v = q[..., 1:]
    s = np.linalg.norm(v, axis=-1)
    angle = 2.0 * np.arctan2(s, w)
    small = s < 1e-8
    k = np.where(small, 2.0 / np.where(w == 0, 1.0, w), angle / np.where(small, 1.0, s))
    return k[..., None] * v


def logmap(m: np.ndarray) -> np.ndarray:
    """Rotation vectors of rotation matrices (inverse of :func:`expmap`)."""
    return quat_to_rotvec(matrix_to_quat(m))


def orthonormal_basis(axis: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The swing basis ``(b1, b2)`` orthogonal to a unit twist ``axis``.

    ``b1`` is the +y direction projected onto the plane orthogonal to ``axis`` (or +z
    when ``axis`` is within about 25 degrees of y), ``b2 = axis x b1``. For the twist
    axis +x this is ``(y, z)``: a ball joint's ``swing_y``/``swing_z`` coordinates are
    rotations about the joint's y and z axes at rest.

    Parameters
    ----------
    axis : (3,) array
        Unit vector.

    Returns
    -------
    b1, b2 : (3,) arrays
        Unit vectors; ``(axis, b1, b2)`` is right-handed.
    """
    a = np.asarray(axis, dtype=np.float64)
    a = a / np.linalg.norm(a)
    e = np.array([0.0, 1.0, 0.0]) if abs(a[1]) < 0.9 else np.array([0.0, 0.0, 1.0])
    b1 = e - np.dot(e, a) * a
    b1 /= np.linalg.norm(b1)
    b2 = np.cross(a, b1)
    return b1, b2


def swing_twist(q: np.ndarray, axis: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decompose rotations as ``q = swing * twist`` with ``twist`` about ``axis``.

    ``twist`` is applied first (to vectors); ``swing`` rotates about an axis orthogonal
    to ``axis``. When the swing is 180 degrees the twist is undefined; the identity twist
    is returned there, which still recomposes ``q`` exactly.

    Parameters
    ----------
    q : (..., 4) array
        Unit quaternions ``(w, x, y, z)``.
    axis : (3,) array
        Unit twist axis.

    Returns
    -------
    swing, twist : (..., 4) arrays
        Unit quaternions with ``quat_multiply(swing, twist) == q`` (up to sign).
    """
    q = np.asarray(q)
    axis = np.asarray(axis, dtype=q.dtype)
    proj = np.sum(q[..., 1:] * axis, axis=-1)
    twist = np.concatenate([q[..., :1], proj[..., None] * axis], axis=-1)
    n = np.linalg.norm(twist, axis=-1, keepdims=True)
    degenerate = n < 1e-9
    identity = np.zeros_like(twist)
    identity[..., 0] = 1.0
    twist = np.where(degenerate, identity, twist / np.where(degenerate, 1.0, n))
    swing = quat_multiply(q, quat_conjugate(twist))
    return swing, twist
