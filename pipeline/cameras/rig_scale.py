"""How many pixels a length unit spans where a camera rig looks: the residuals' scale.

A fit through calibrated cameras compares pixels, while its prior and an OpenSim setup's
coordinate-task weights are stated against residuals in length units (metres squared per
radian squared). :func:`rig_pixel_scale` is the factor ``k`` (pixels per length unit)
that turns one into the other: the cameras' optical axes nearly meet at the subject (the
least-squares point closest to all of them), camera ``c`` sees a length ``L`` there as
``f_c L / d_c`` pixels (``f_c = sqrt(fx fy)``, ``d_c`` its depth along the axis), and ``k``
is the root mean square of ``f_c / d_c`` over the cameras (the data term sums squared
pixels over them).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pipeline.cameras.camera import Camera

__all__ = ["rig_pixel_scale"]

#: Smallest singular value (relative) of the axes' normal matrix for a defined meeting point.
_PARALLEL = 1e-6


def rig_pixel_scale(cameras: Sequence[Camera]) -> float | None:
    """Pixels per length unit at the point the cameras look at (module docstring).

    Parameters
    ----------
    cameras : sequence of Camera

    Returns
    -------
    float or None
        ``k`` in pixels per the extrinsics' length unit; None for one camera, parallel
        optical axes, or a meeting point behind a camera (no depth to measure).
    """
    if len(cameras) < 2:
        return None
    centers, axes, focal = [], [], []
    for cam in cameras:
        rot = np.asarray(cam.rotation, np.float64)
        centers.append(-rot.T @ np.asarray(cam.translation, np.float64))
        axes.append(rot[2])  # the optical axis in world coordinates
        focal.append(float(np.sqrt(cam.fx * cam.fy)))
    c, z = np.array(centers), np.array(axes)
    proj = np.eye(3)[None] - z[:, :, None] * z[:, None, :]  # (C, 3, 3): off-axis parts
    a, b = proj.sum(axis=0), np.einsum("cij,cj->i", proj, c)
    s = np.linalg.svd(a, compute_uv=False)
    if s[-1] <= _PARALLEL * s[0]:
        return None
    point = np.linalg.solve(a, b)
    depth = np.einsum("ci,ci->c", point[None] - c, z)
    if np.any(depth <= 0):
        return None
    return float(np.sqrt(np.mean((np.array(focal) / depth) ** 2)))
