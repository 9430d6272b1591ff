"""Rodrigues vectors (axis times angle, rad) to rotation matrices and back.

The same maps as OpenCV's ``cv2.Rodrigues``; kept here so that reading a calibration
imports nothing heavy.
"""

from __future__ import annotations

import numpy as np

__all__ = ["matrix_to_rvec", "rvec_to_matrix"]


def rvec_to_matrix(rvec: np.ndarray) -> np.ndarray:
    """``(3, 3)`` rotation of a ``(3,)`` Rodrigues vector: ``exp([r]x)``."""
    r = np.asarray(rvec, dtype=np.float64).reshape(3)
    theta = float(np.sqrt(r @ r))
    k = np.array([[0.0, -r[2], r[1]], [r[2], 0.0, -r[0]], [-r[1], r[0], 0.0]])
    if theta < 1e-8:  # series of sin(t)/t and (1 - cos(t))/t^2
        a, b = 1.0 - theta * theta / 6.0, 0.5 - theta * theta / 24.0
    else:
        a, b = np.sin(theta) / theta, (1.0 - np.cos(theta)) / (theta * theta)
    return np.eye(3) + a * k + b * (k @ k)


def matrix_to_rvec(rot: np.ndarray) -> np.ndarray:
    """``(3,)`` Rodrigues vector (angle in ``[0, pi]``) of a ``(3, 3)`` rotation."""
    m = np.asarray(rot, dtype=np.float64).reshape(3, 3)
    # through the unit quaternion (Shepperd's method: stable at every angle)
    tr = np.trace(m)
    diag = np.diag(m)
    i = int(np.argmax(np.r_[tr, diag]))
    if i == 0:
        w = np.sqrt(max(1.0 + tr, 0.0)) / 2.0
        v = np.array([m[2, 1] - m[1, 2], m[0, 2] - m[2, 0], m[1, 0] - m[0, 1]]) / (4.0 * w)
    else:
        a = i - 1
        b, c = (a + 1) % 3, (a + 2) % 3
        va = np.sqrt(max(1.0 + m[a, a] - m[b, b] - m[c, c], 0.0)) / 2.0
        v = np.zeros(3)
        v[a] = va
        v[b] = (m[b, a] + m[a, b]) / (4.0 * va)
        v[c] = (m[c, a] + m[a, c]) / (4.0 * va)
        w = (m[c, b] - m[b, c]) / (4.0 * va)
    if w < 0:
        w, v = -w, -v
    s = float(np.sqrt(v @ v))
    if s < 1e-12:
        return 2.0 * v / max(w, 1e-300)
    return 2.0 * np.arctan2(s, w) / s * v
