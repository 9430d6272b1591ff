"""One calibrated camera's distorted projection of a point and its 2x3 Jacobian, compiled.

Scalar form of :func:`pipeline.cameras.lens_projection.project_jacobian` (the formulas are in
that module's docstring), for the compiled engine's projection rows
(:mod:`pipeline.solve.compiled.projection`). ``cam`` is the tuple of
:class:`pipeline.cameras.CameraArrays` fields. Model code :data:`XY_PLANE` is the image on
the world's XY plane (:class:`pipeline.solve.XYView`, ``(x, y, z) -> (x, y)``): a single-view
2D fit solves on the same kernel as calibrated cameras.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from pipeline.solve.rules import INLINE

__all__ = ["XY_PLANE", "project_point"]

_FISHEYE_EPS = 1e-8
#: Model code of the world's XY plane (after :data:`pipeline.cameras.lens_projection.MODEL_CODES`).
XY_PLANE = 3


@nb.njit(**INLINE)
def project_point(cam, c: int, p: np.ndarray, jac: np.ndarray) -> tuple[float, float, bool]:
    """Pixel of world point ``p`` in camera ``c`` and ``jac (2, 3)``; False behind it."""
    rot, tr, foc, cen, model, coef = cam
    if model[c] == XY_PLANE:
        for k in range(3):
            jac[0, k] = 1.0 if k == 0 else 0.0
            jac[1, k] = 1.0 if k == 1 else 0.0
        return p[0], p[1], True
    xc = rot[c, 0, 0] * p[0] + rot[c, 0, 1] * p[1] + rot[c, 0, 2] * p[2] + tr[c, 0]
    yc = rot[c, 1, 0] * p[0] + rot[c, 1, 1] * p[1] + rot[c, 1, 2] * p[2] + tr[c, 1]
    zc = rot[c, 2, 0] * p[0] + rot[c, 2, 1] * p[1] + rot[c, 2, 2] * p[2] + tr[c, 2]
    if not zc > 0.0:
        return 0.0, 0.0, False
    iz = 1.0 / zc
    x, y = xc * iz, yc * iz
    r2 = x * x + y * y
    if model[c] == 2:
        k1, k2, k3, k4 = coef[c, 0], coef[c, 1], coef[c, 2], coef[c, 3]
        r = math.sqrt(r2)
        th = math.atan(r)
        t2 = th * th
        poly = 1.0 + t2 * (k1 + t2 * (k2 + t2 * (k3 + t2 * k4)))
        if r <= _FISHEYE_EPS:
            s, g = 1.0, 0.0
        else:
            s = th * poly / r
            dpoly = 1.0 + t2 * (3.0 * k1 + t2 * (5.0 * k2 + t2 * (7.0 * k3 + t2 * 9.0 * k4)))
            g = (dpoly / (1.0 + r2) - s) / (r * r)
        xd, yd = s * x, s * y
        a, b, d = s + g * x * x, g * x * y, s + g * y * y
        b2 = b
    else:
        k1, k2, p1, p2, k3 = coef[c, 0], coef[c, 1], coef[c, 2], coef[c, 3], coef[c, 4]
        radial = 1.0 + r2 * (k1 + r2 * (k2 + r2 * k3))
        xy = x * y
        xd = x * radial + 2.0 * p1 * xy + p2 * (r2 + 2.0 * x * x)
        yd = y * radial + p1 * (r2 + 2.0 * y * y) + 2.0 * p2 * xy
        dr = k1 + r2 * (2.0 * k2 + 3.0 * k3 * r2)
        b = 2.0 * xy * dr + 2.0 * p1 * x + 2.0 * p2 * y
        b2 = b
        a = radial + 2.0 * x * x * dr + 2.0 * p1 * y + 6.0 * p2 * x
        d = radial + 2.0 * y * y * dr + 6.0 * p1 * y + 2.0 * p2 * x
    fx, fy = foc[c, 0], foc[c, 1]
    # d pixel / d camera point = diag(f) @ [[a, b], [b2, d]] @ (1/Z)[[1, 0, -x], [0, 1, -y]]
    n00, n02 = fx * a * iz, -fx * (a * x + b * y) * iz
    n01 = fx * b * iz
    n10, n11 = fy * b2 * iz, fy * d * iz
    n12 = -fy * (b2 * x + d * y) * iz
    for k in range(3):
        jac[0, k] = n00 * rot[c, 0, k] + n01 * rot[c, 1, k] + n02 * rot[c, 2, k]
        jac[1, k] = n10 * rot[c, 0, k] + n11 * rot[c, 1, k] + n12 * rot[c, 2, k]
    return fx * xd + cen[c, 0], fy * yd + cen[c, 1], True
