"""Euler angles of rotations, and unwrapping angle series over time.

Intrinsic sequences (each rotation about the axis as turned by the ones before), through
scipy's :class:`~scipy.spatial.transform.Rotation`; Tait-Bryan and proper Euler.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.spatial.transform import Rotation

__all__ = ["euler_angles", "euler_of_matrices", "unwrap"]


def euler_angles(quat: np.ndarray, sequence: str) -> np.ndarray:
    """Intrinsic Euler angles of rotations.

    Parameters
    ----------
    quat : (..., 4) array
        Rotations as quaternions ``(w, x, y, z)`` (normalized here); NaN rows stay NaN.
    sequence : str
        One of :data:`SEQUENCES` (intrinsic).

    Returns
    -------
    (..., 3) array
        Radians, wrapped (first and last in ``(-pi, pi]``; the middle one in
        ``[-pi/2, pi/2]`` for Tait-Bryan, ``[0, pi]`` for proper Euler), such that
        ``R(quat) = R_a(t1) @ R_b(t2) @ R_c(t3)``.
    """
    q = np.asarray(quat, dtype=np.float64)
    flat = q.reshape(-1, 4)
    good = np.isfinite(flat).all(axis=1) & (np.linalg.norm(flat, axis=1) > 0)
    out = np.full((flat.shape[0], 3), np.nan)
    if good.any():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # gimbal lock: still a valid answer
            rot = Rotation.from_quat(flat[good], scalar_first=True)
            out[good] = rot.as_euler(sequence.upper())
    return out.reshape(q.shape[:-1] + (3,))


def unwrap(values: np.ndarray, axis: int = 0) -> np.ndarray:
    """Remove 2 pi jumps along ``axis``, skipping NaN entries (NaN stays NaN).

    Parameters
    ----------
    values : array
        Angles in radians.
    axis : int
        The time axis.

    Returns
    -------
    array
        Same shape; each finite entry differs from the previous finite one along ``axis``
        by at most pi.
    """
    moved = np.moveaxis(np.asarray(values, dtype=np.float64), axis, 0)
    out = moved.copy()
    flat = out.reshape(out.shape[0], -1)
    for k in range(flat.shape[1]):
        series = flat[:, k]
        finite = np.isfinite(series)
        if finite.sum() > 1:
            series[finite] = np.unwrap(series[finite])
    return np.moveaxis(flat.reshape(out.shape), 0, axis)


def euler_of_matrices(rot: np.ndarray, sequence: str) -> np.ndarray:
    """Intrinsic Euler angles ``(..., 3)`` (radians) of rotation matrices ``(..., 3, 3)``."""
    flat = rot.reshape(-1, 3, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # gimbal lock: still a valid answer
        angles = Rotation.from_matrix(flat).as_euler(sequence.upper())
    return angles.reshape(rot.shape[:-2] + (3,))
