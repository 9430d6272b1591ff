r"""Vectorized projection of world points through calibrated cameras, and its Jacobian.

Everything works on a packed batch of cameras (:class:`CameraArrays`, from :func:`pack`)
whose camera axis broadcasts against the second-to-last axis of the inputs: world points
``(..., C, 3)`` (``(..., 1, 3)`` to see the same points from every camera) give pixels
``(..., C, 2)`` and the Jacobian ``d pixel / d world point`` ``(..., C, 2, 3)``.

The formulas (OpenCV's, ``cv2.projectPoints`` and ``cv2.fisheye.projectPoints``), written
as plain scalar arithmetic so that a compiled (numba) kernel can reproduce them line by
line; ``c`` is the camera's 5-slot coefficient row, ``m`` its model code:

Camera frame and normalized coordinates::

    X, Y, Z = R @ p + t                      (R world-to-camera rotation, t translation)
    x, y    = X / Z, Y / Z                   (Z <= 0: behind the camera -> NaN pixel,
                                              zero Jacobian)

Distortion ``(x, y) -> (xd, yd)``, model ``m``:

* ``m = 0`` none, ``m = 1`` radtan, ``c = (k1, k2, p1, p2, k3)`` (none is radtan with
  ``c = 0``)::

      r2 = x*x + y*y
      radial = 1 + k1*r2 + k2*r2**2 + k3*r2**3
      xd = x*radial + 2*p1*x*y + p2*(r2 + 2*x*x)
      yd = y*radial + p1*(r2 + 2*y*y) + 2*p2*x*y
      D' = k1 + 2*k2*r2 + 3*k3*r2**2           (d radial / d r2)
      dxd/dx = radial + 2*x*x*D' + 2*p1*y + 6*p2*x
      dxd/dy = 2*x*y*D' + 2*p1*x + 2*p2*y
      dyd/dx = 2*x*y*D' + 2*p1*x + 2*p2*y
      dyd/dy = radial + 2*y*y*D' + 6*p1*y + 2*p2*x

* ``m = 2`` fisheye (equidistant), ``c = (k1, k2, k3, k4, 0)``::

      r = sqrt(x*x + y*y);  th = atan(r)
      thd = th*(1 + k1*th**2 + k2*th**4 + k3*th**6 + k4*th**8)
      s = thd / r                               (s = 1 where r <= 1e-8, as OpenCV does)
      xd, yd = s*x, s*y
      thd' = 1 + 3*k1*th**2 + 5*k2*th**4 + 7*k3*th**6 + 9*k4*th**8   (d thd / d th)
      g = (thd' / (1 + r*r) - s) / (r*r)        ((ds/dr) / r; g = 0 where r <= 1e-8)
      dxd/dx = s + g*x*x;  dxd/dy = dyd/dx = g*x*y;  dyd/dy = s + g*y*y

Pixels and the chain rule::

    u, v = fx*xd + cx, fy*yd + cy
    d(u, v)/dp = diag(fx, fy) @ [[dxd/dx, dxd/dy], [dyd/dx, dyd/dy]]
                 @ (1/Z) [[1, 0, -x], [0, 1, -y]] @ R

Inverse distortion (:func:`undistort`): radtan by Newton's method on ``(x, y)`` with the
2x2 Jacobian above (quadratic convergence; OpenCV's ``undistortPoints`` iterates a fixed
point instead), NaN where it does not reach the pixel to 1e-9 or lands past the fold of
the lens polynomial (``det J <= 0``); fisheye by Newton's method on the scalar
``thd(th) = |(xd, yd)|``, then ``r = tan(th)`` and ``(x, y) = (xd, yd) * r / thd``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from pipeline.cameras.camera import Camera

__all__ = [
    "MODEL_CODES",
    "CameraArrays",
    "camera_points",
    "distort",
    "pack",
    "project",
    "project_jacobian",
    "undistort",
]

MODEL_CODES = {"none": 0, "radtan": 1, "fisheye": 2}
"""Integer code of each distortion model in :attr:`CameraArrays.model`."""

_FISHEYE_EPS = 1e-8  # OpenCV's fisheye threshold on r below which s = 1
_UNDISTORT_TOLERANCE = 1e-9  # normalized units (about 1e-6 px): beyond it, no inverse


class CameraArrays(NamedTuple):
    """A batch of ``C`` cameras as plain float64/int arrays (what a kernel would take).

    Attributes
    ----------
    rotation : (C, 3, 3)
        World-to-camera rotations.
    translation : (C, 3)
        World-to-camera translations (extrinsics' unit).
    focal : (C, 2)
        ``(fx, fy)`` in pixels.
    center : (C, 2)
        ``(cx, cy)`` in pixels.
    model : (C,) int64
        :data:`MODEL_CODES` of each camera's distortion.
    coef : (C, 5)
        radtan ``(k1, k2, p1, p2, k3)``; fisheye ``(k1, k2, k3, k4, 0)``; none zeros.
    """

    rotation: np.ndarray
    translation: np.ndarray
    focal: np.ndarray
    center: np.ndarray
    model: np.ndarray
    coef: np.ndarray


def pack(cameras: Sequence[Camera]) -> CameraArrays:
    """Pack cameras (in order) into :class:`CameraArrays`."""
    coef = np.zeros((len(cameras), 5))
    for i, cam in enumerate(cameras):
        coef[i, : len(cam.coefficients)] = cam.coefficients
    return CameraArrays(
        rotation=np.array([cam.rotation for cam in cameras], dtype=np.float64).reshape(-1, 3, 3),
        translation=np.array([cam.translation for cam in cameras], dtype=np.float64).reshape(-1, 3),
        focal=np.array([(cam.fx, cam.fy) for cam in cameras], dtype=np.float64).reshape(-1, 2),
        center=np.array([(cam.cx, cam.cy) for cam in cameras], dtype=np.float64).reshape(-1, 2),
        model=np.array([MODEL_CODES[cam.distortion] for cam in cameras], dtype=np.int64),
        coef=coef,
    )


def camera_points(cams: CameraArrays, points: np.ndarray) -> np.ndarray:
    """Camera-frame coordinates ``R @ p + t``: ``(..., C, 3)`` from ``(..., C|1, 3)``."""
    p = np.asarray(points, dtype=np.float64)
    return np.einsum("cab,...cb->...ca", cams.rotation, p) + cams.translation


def _radtan(x, y, c, need_jac: bool):
    k1, k2, p1, p2, k3 = (c[..., i] for i in range(5))
    r2 = x * x + y * y
    radial = 1.0 + r2 * (k1 + r2 * (k2 + r2 * k3))
    xy = x * y
    xd = x * radial + 2.0 * p1 * xy + p2 * (r2 + 2.0 * x * x)
    yd = y * radial + p1 * (r2 + 2.0 * y * y) + 2.0 * p2 * xy
    if not need_jac:
        return xd, yd, None
    dr = k1 + r2 * (2.0 * k2 + 3.0 * k3 * r2)
    off = 2.0 * xy * dr + 2.0 * p1 * x + 2.0 * p2 * y
    jac = (
        radial + 2.0 * x * x * dr + 2.0 * p1 * y + 6.0 * p2 * x,
        off,
        off,
        radial + 2.0 * y * y * dr + 6.0 * p1 * y + 2.0 * p2 * x,
    )
    return xd, yd, jac


def _fisheye(x, y, c, need_jac: bool):
    k1, k2, k3, k4 = (c[..., i] for i in range(4))
    r2 = x * x + y * y
    r = np.sqrt(r2)
    tiny = r <= _FISHEYE_EPS
    safe_r = np.where(tiny, 1.0, r)
    th = np.arctan(r)
    t2 = th * th
    poly = 1.0 + t2 * (k1 + t2 * (k2 + t2 * (k3 + t2 * k4)))
    s = np.where(tiny, 1.0, th * poly / safe_r)
    xd, yd = s * x, s * y
    if not need_jac:
        return xd, yd, None
    dpoly = 1.0 + t2 * (3.0 * k1 + t2 * (5.0 * k2 + t2 * (7.0 * k3 + t2 * 9.0 * k4)))
    g = np.where(tiny, 0.0, (dpoly / (1.0 + r2) - s) / (safe_r * safe_r))
    off = g * x * y
    return xd, yd, (s + g * x * x, off, off, s + g * y * y)


def _groups(cams: CameraArrays):
    """``(kernel, camera indices or slice(None))`` for each lens family in the batch."""
    fish = cams.model == MODEL_CODES["fisheye"]
    if not fish.any():
        return [(_radtan, slice(None))]
    if fish.all():
        return [(_fisheye, slice(None))]
    return [(_radtan, np.flatnonzero(~fish)), (_fisheye, np.flatnonzero(fish))]


def distort(cams: CameraArrays, xy: np.ndarray, need_jac: bool = False):
    """Distorted normalized coordinates of normalized ones, per camera.

    Parameters
    ----------
    cams : CameraArrays
    xy : (..., C, 2) array
        Undistorted normalized coordinates ``(X/Z, Y/Z)``.
    need_jac : bool
        Also return the ``(..., C, 2, 2)`` Jacobian ``d(xd, yd) / d(x, y)``.

    Returns
    -------
    xyd : (..., C, 2) array
    jac : (..., C, 2, 2) array or None
    """
    xy = np.asarray(xy, dtype=np.float64)
    n = cams.model.shape[0]
    xy = np.broadcast_to(xy, (*xy.shape[:-2], n, 2))
    out = np.empty(xy.shape)
    jac = np.empty((*xy.shape, 2)) if need_jac else None
    for kernel, idx in _groups(cams):
        part = xy[..., idx, :]
        xd, yd, j = kernel(part[..., 0], part[..., 1], cams.coef[idx], need_jac)
        out[..., idx, 0], out[..., idx, 1] = xd, yd
        if need_jac:
            jac[..., idx, 0, 0], jac[..., idx, 0, 1] = j[0], j[1]
            jac[..., idx, 1, 0], jac[..., idx, 1, 1] = j[2], j[3]
    return out, jac


def project(cams: CameraArrays, points: np.ndarray) -> np.ndarray:
    """Pixels ``(..., C, 2)`` of world points ``(..., C|1, 3)``; NaN where ``Z <= 0``."""
    return project_jacobian(cams, points, need_jac=False)[0]


def project_jacobian(cams: CameraArrays, points: np.ndarray, need_jac: bool = True):
    """Pixels and their exact Jacobian with respect to the world point.

    Parameters
    ----------
    cams : CameraArrays
    points : (..., C, 3) or (..., 1, 3) array
        World points (extrinsics' unit).
    need_jac : bool
        Compute the Jacobian (``None`` otherwise).

    Returns
    -------
    pixels : (..., C, 2) array
        NaN for points at or behind the camera plane (``Z <= 0``).
    jac : (..., C, 2, 3) array or None
        ``d pixel / d point`` in pixels per length unit; 0 where ``Z <= 0``.
    """
    xc = camera_points(cams, points)
    z = xc[..., 2]
    front = z > 0
    inv_z = 1.0 / np.where(front, z, 1.0)
    xy = xc[..., :2] * inv_z[..., None]
    xyd, jd = distort(cams, xy, need_jac)
    pix = xyd * cams.focal + cams.center
    pix = np.where(front[..., None], pix, np.nan)
    if not need_jac:
        return pix, None
    # d(x, y)/d(X, Y, Z) = (1/Z) [[1, 0, -x], [0, 1, -y]]
    dn = np.zeros((*z.shape, 2, 3))
    dn[..., 0, 0] = dn[..., 1, 1] = inv_z
    dn[..., :, 2] = -xy * inv_z[..., None]
    jac = (cams.focal[..., None] * jd) @ dn @ cams.rotation
    return pix, np.where(front[..., None, None], jac, 0.0)


def _undistort_radtan(xyd: np.ndarray, coef: np.ndarray, iterations: int) -> np.ndarray:
    x, y = xyd[..., 0].copy(), xyd[..., 1].copy()
    for _ in range(iterations):
        xd, yd, (a, b, c, d) = _radtan(x, y, coef, True)
        ex, ey = xd - xyd[..., 0], yd - xyd[..., 1]
        det = a * d - b * c
        ok = np.abs(det) > 1e-12
        det = np.where(ok, det, 1.0)
        step_x = np.where(ok, (d * ex - b * ey) / det, 0.0)
        step_y = np.where(ok, (a * ey - c * ex) / det, 0.0)
        x, y = x - step_x, y - step_y
        if not np.any(np.abs(step_x) + np.abs(step_y) > 1e-15):  # NaN (missing) stays
            break
    xd, yd, (a, b, c, d) = _radtan(x, y, coef, True)
    off = np.hypot(xd - xyd[..., 0], yd - xyd[..., 1])
    # a root past the fold of the lens polynomial (the map not orientation-preserving
    # there) is not the point the lens imaged
    ok = (off <= _UNDISTORT_TOLERANCE) & (a * d - b * c > 0) & (a > 0) & (d > 0)
    return np.where(ok[..., None], np.stack([x, y], axis=-1), np.nan)


def _undistort_fisheye(xyd: np.ndarray, coef: np.ndarray, iterations: int) -> np.ndarray:
    k1, k2, k3, k4 = (coef[..., i] for i in range(4))
    thd = np.sqrt(np.sum(xyd * xyd, axis=-1))
    th = np.minimum(thd, np.pi / 2)
    for _ in range(iterations):
        t2 = th * th
        f = th * (1.0 + t2 * (k1 + t2 * (k2 + t2 * (k3 + t2 * k4)))) - thd
        df = 1.0 + t2 * (3.0 * k1 + t2 * (5.0 * k2 + t2 * (7.0 * k3 + t2 * 9.0 * k4)))
        step = f / np.where(df != 0, df, 1.0)
        th = th - step
        if not np.any(np.abs(step) > 1e-15):
            break
    t2 = th * th
    f = th * (1.0 + t2 * (k1 + t2 * (k2 + t2 * (k3 + t2 * k4)))) - thd
    df = 1.0 + t2 * (3.0 * k1 + t2 * (5.0 * k2 + t2 * (7.0 * k3 + t2 * 9.0 * k4)))
    tiny = thd <= _FISHEYE_EPS
    reached = (np.abs(f) <= _UNDISTORT_TOLERANCE) & (df > 0)  # not past the fold
    valid = tiny | (reached & (th >= 0) & (th < np.pi / 2))
    scale = np.where(tiny, 1.0, np.tan(th) / np.where(tiny, 1.0, thd))
    scale = np.where(valid, scale, np.nan)
    return xyd * scale[..., None]


def undistort(cams: CameraArrays, pixels: np.ndarray, iterations: int = 20) -> np.ndarray:
    """Undistorted normalized coordinates ``(X/Z, Y/Z)`` of observed pixels.

    Parameters
    ----------
    cams : CameraArrays
    pixels : (..., C, 2) array
        Pixel observations, NaN where missing.
    iterations : int
        Newton steps (20 reach machine precision for realistic lenses).

    Returns
    -------
    (..., C, 2) array
        Normalized coordinates; ``distort`` of them gives the observations back. NaN where
        missing, where Newton's method does not reach the pixel (radtan: beyond where the
        lens polynomial folds back), and for fisheye pixels beyond the 90 degree ray.
    """
    pix = np.asarray(pixels, dtype=np.float64)
    xyd = (pix - cams.center) / cams.focal
    out = np.empty(xyd.shape)
    for kernel, idx in _groups(cams):
        inverse = _undistort_radtan if kernel is _radtan else _undistort_fisheye
        out[..., idx, :] = inverse(xyd[..., idx, :], cams.coef[idx], iterations)
    return out
