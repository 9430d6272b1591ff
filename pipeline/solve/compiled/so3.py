"""Scalar rotation helpers for the compiled kernels (3x3 matrices, wxyz quaternions).

Everything here works on one rotation at a time, in float64, writing into caller-owned
buffers so that the per-frame loops allocate nothing.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from pipeline.solve.compiled.compilers import NOREFCOUNT_JIT
from pipeline.solve.rules import INLINE

__all__ = [
    "axis_angle",
    "expmap_and_left_jacobian",
    "matmul3",
    "matrix_to_quat",
    "quat_from_rotvec_times",
    "quat_to_matrix",
    "rotvec_times",
]


@nb.njit(**NOREFCOUNT_JIT)
def axis_angle(
    ux: float, uy: float, uz: float, c: float, s: float, out: np.ndarray, i: int
) -> None:
    """``out[i]``: rotation by the angle with cosine ``c``, sine ``s`` about unit ``u``."""
    out = out[i]
    t = 1.0 - c
    out[0, 0] = c + t * ux * ux
    out[0, 1] = t * ux * uy - s * uz
    out[0, 2] = t * ux * uz + s * uy
    out[1, 0] = t * ux * uy + s * uz
    out[1, 1] = c + t * uy * uy
    out[1, 2] = t * uy * uz - s * ux
    out[2, 0] = t * ux * uz - s * uy
    out[2, 1] = t * uy * uz + s * ux
    out[2, 2] = c + t * uz * uz


@nb.njit(**NOREFCOUNT_JIT)
def expmap_and_left_jacobian(x: float, y: float, z: float, out: np.ndarray) -> None:
    """``exp([v]x)`` into ``out[0]`` and the SO(3) left Jacobian ``J_l(v)`` into ``out[1]``.

    ``J_l = I + B [v]x + C [v]x^2`` with ``B = (1 - cos t) / t^2`` and
    ``C = (t - sin t) / t^3``; both use their Taylor series below ``t = 1e-4``.
    """
    t2 = x * x + y * y + z * z
    t = math.sqrt(t2)
    if t < 1e-4:
        a = 1.0 - t2 / 6.0
        b = 0.5 - t2 / 24.0
        c = 1.0 / 6.0 - t2 / 120.0
    else:
        s, co = math.sin(t), math.cos(t)
        a = s / t
        b = (1.0 - co) / t2
        c = (t - s) / (t2 * t)
    _rodrigues_form(x, y, z, t2, a, b, out, 0)
    _rodrigues_form(x, y, z, t2, b, c, out, 1)


@nb.njit(**INLINE)
def _rodrigues_form(
    x: float, y: float, z: float, t2: float, p: float, r: float, out: np.ndarray, i: int
) -> None:
    """``out[i] = I + p [v]x + r [v]x^2`` for ``v = (x, y, z)``, ``t2 = |v|^2``."""
    m = out[i]
    # [v]x^2 = v v^T - t^2 I
    xx, yy, zz, xy, xz, yz = x * x - t2, y * y - t2, z * z - t2, x * y, x * z, y * z
    m[0, 0] = 1.0 + r * xx
    m[1, 1] = 1.0 + r * yy
    m[2, 2] = 1.0 + r * zz
    m[0, 1] = -p * z + r * xy
    m[1, 0] = p * z + r * xy
    m[0, 2] = p * y + r * xz
    m[2, 0] = -p * y + r * xz
    m[1, 2] = -p * x + r * yz
    m[2, 1] = p * x + r * yz


@nb.njit(**NOREFCOUNT_JIT)
def matmul3(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """``out = a @ b`` for 3x3 matrices (``out`` must not alias ``a`` or ``b``)."""
    for i in range(3):
        a0, a1, a2 = a[i, 0], a[i, 1], a[i, 2]
        for j in range(3):
            out[i, j] = a0 * b[0, j] + a1 * b[1, j] + a2 * b[2, j]


@nb.njit(**INLINE)
def quat_to_matrix(q: np.ndarray, out: np.ndarray) -> None:
    """Rotation matrix of the wxyz quaternion ``q`` (normalized here)."""
    n = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    if not n > 0.0:
        n = 1.0
    w, x, y, z = q[0] / n, q[1] / n, q[2] / n, q[3] / n
    out[0, 0] = 1.0 - 2.0 * (y * y + z * z)
    out[0, 1] = 2.0 * (x * y - w * z)
    out[0, 2] = 2.0 * (x * z + w * y)
    out[1, 0] = 2.0 * (x * y + w * z)
    out[1, 1] = 1.0 - 2.0 * (x * x + z * z)
    out[1, 2] = 2.0 * (y * z - w * x)
    out[2, 0] = 2.0 * (x * z - w * y)
    out[2, 1] = 2.0 * (y * z + w * x)
    out[2, 2] = 1.0 - 2.0 * (x * x + y * y)


@nb.njit(**INLINE)
def rotvec_times(v0: float, v1: float, v2: float, bw: float, bx: float, by: float, bz: float):
    """``normalize(quat(v) * b)`` of a rotation vector ``v`` (rad) and a quaternion ``b``.

    Returns the quaternion ``(w, x, y, z)``: :func:`quat_from_rotvec_times` on scalars.
    """
    t = math.sqrt(v0 * v0 + v1 * v1 + v2 * v2)
    h = 0.5 * t
    k = 0.5 - t * t / 48.0 if t < 1e-8 else math.sin(h) / t
    aw, ax, ay, az = math.cos(h), k * v0, k * v1, k * v2
    w = aw * bw - ax * bx - ay * by - az * bz
    x = aw * bx + ax * bw + ay * bz - az * by
    y = aw * by - ax * bz + ay * bw + az * bx
    z = aw * bz + ax * by - ay * bx + az * bw
    n = math.sqrt(w * w + x * x + y * y + z * z)
    if not n > 0.0:
        n = 1.0
    return w / n, x / n, y / n, z / n


@nb.njit(**INLINE)
def quat_from_rotvec_times(v: np.ndarray, q: np.ndarray, out: np.ndarray) -> None:
    """``normalize(quat(v) * q)``: the world-frame increment ``exp(v)`` applied to ``q``."""
    out[0], out[1], out[2], out[3] = rotvec_times(v[0], v[1], v[2], q[0], q[1], q[2], q[3])


@nb.njit(**NOREFCOUNT_JIT)
def matrix_to_quat(m: np.ndarray, out: np.ndarray) -> None:
    """Unit wxyz quaternion, ``w >= 0``, of the rotation matrix ``m``.

    The branch of the largest of trace and diagonal terms, as
    :func:`pipeline.kinematics.rotations.matrix_to_quat`.
    """
    m00, m11, m22 = m[0, 0], m[1, 1], m[2, 2]
    trace = m00 + m11 + m22
    if trace >= m00 and trace >= m11 and trace >= m22:
        w, x = 1.0 + trace, m[2, 1] - m[1, 2]
        y, z = m[0, 2] - m[2, 0], m[1, 0] - m[0, 1]
    elif m00 >= m11 and m00 >= m22:
        w, x = m[2, 1] - m[1, 2], 1.0 + m00 - m11 - m22
        y, z = m[0, 1] + m[1, 0], m[0, 2] + m[2, 0]
    elif m11 >= m22:
        w, x = m[0, 2] - m[2, 0], m[0, 1] + m[1, 0]
        y, z = 1.0 - m00 + m11 - m22, m[1, 2] + m[2, 1]
    else:
        w, x = m[1, 0] - m[0, 1], m[0, 2] + m[2, 0]
        y, z = m[1, 2] + m[2, 1], 1.0 - m00 - m11 + m22
    n = math.sqrt(w * w + x * x + y * y + z * z)
    if w < 0.0:
        n = -n
    out[0], out[1], out[2], out[3] = w / n, x / n, y / n, z / n
