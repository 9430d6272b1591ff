"""3x3 matrix products and inverses for the per-coordinate smoother (compiled).

The smoother's state is three numbers per coordinate (value, velocity, acceleration), so
its algebra is on 3x3 matrices and 3-vectors, written out here for numba.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from pipeline.solve.kernel_cache import stamp_package
from pipeline.solve.rules import JIT

# before the kernels below are decorated: their cache is stamped with this package's sources
stamp_package("pipeline.solve.temporal")

__all__ = ["inv3", "mul3", "mul3t", "mulv3"]


@nb.njit(**JIT)
def inv3(a: np.ndarray, out: np.ndarray) -> None:
    """``out = a^-1`` of an invertible 3x3 matrix ``a`` (adjugate over determinant)."""
    c00 = a[1, 1] * a[2, 2] - a[1, 2] * a[2, 1]
    c01 = a[1, 2] * a[2, 0] - a[1, 0] * a[2, 2]
    c02 = a[1, 0] * a[2, 1] - a[1, 1] * a[2, 0]
    det = a[0, 0] * c00 + a[0, 1] * c01 + a[0, 2] * c02
    inv = 1.0 / det
    out[0, 0] = c00 * inv
    out[1, 0] = c01 * inv
    out[2, 0] = c02 * inv
    out[0, 1] = (a[0, 2] * a[2, 1] - a[0, 1] * a[2, 2]) * inv
    out[1, 1] = (a[0, 0] * a[2, 2] - a[0, 2] * a[2, 0]) * inv
    out[2, 1] = (a[0, 1] * a[2, 0] - a[0, 0] * a[2, 1]) * inv
    out[0, 2] = (a[0, 1] * a[1, 2] - a[0, 2] * a[1, 1]) * inv
    out[1, 2] = (a[0, 2] * a[1, 0] - a[0, 0] * a[1, 2]) * inv
    out[2, 2] = (a[0, 0] * a[1, 1] - a[0, 1] * a[1, 0]) * inv


@nb.njit(**JIT)
def mul3(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """``out = a b`` (3x3; ``out`` must not be ``a`` or ``b``)."""
    for i in range(3):
        for j in range(3):
            out[i, j] = a[i, 0] * b[0, j] + a[i, 1] * b[1, j] + a[i, 2] * b[2, j]


@nb.njit(**JIT)
def mul3t(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """``out = a b^T`` (3x3; ``out`` must not be ``a`` or ``b``)."""
    for i in range(3):
        for j in range(3):
            out[i, j] = a[i, 0] * b[j, 0] + a[i, 1] * b[j, 1] + a[i, 2] * b[j, 2]


@nb.njit(**JIT)
def mulv3(a: np.ndarray, x: np.ndarray, out: np.ndarray) -> None:
    """``out = a x`` (3x3 times 3; ``out`` must not be ``x``)."""
    for i in range(3):
        out[i] = a[i, 0] * x[0] + a[i, 1] * x[1] + a[i, 2] * x[2]
