r"""Linear (DLT) triangulation from several calibrated views, and reprojection errors.

For each point, every view ``c`` that sees it contributes two rows built from its
*undistorted normalized* coordinates ``(x, y)`` (:func:`pipeline.cameras.lens_projection.undistort`)
and its ``3x4`` extrinsic matrix ``P = [R | t]``::

    w_c * (x * P[2] - P[0])
    w_c * (y * P[2] - P[1])

and the point is the right singular vector of the smallest singular value of the stacked
``(2C, 4)`` system ``A`` (the eigenvector of ``A.T @ A`` with the smallest eigenvalue),
dehomogenized (as aniposelib's ``triangulate_simple``, with Pose2Sim's
confidence-weighted rows). Views whose pixel is NaN or whose weight is 0 or NaN drop out;
points seen by fewer than ``min_views`` views are NaN.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pipeline.cameras.camera import Camera
from pipeline.cameras.lens_projection import CameraArrays, pack, project, undistort

__all__ = ["reprojection_error", "triangulate"]


def _arrays(cameras: CameraArrays | Sequence[Camera]) -> CameraArrays:
    return cameras if isinstance(cameras, CameraArrays) else pack(cameras)


def triangulate(
    cameras: CameraArrays | Sequence[Camera],
    pixels: np.ndarray,
    weights: np.ndarray | None = None,
    min_views: int = 2,
) -> np.ndarray:
    """World points from their pixels in several views.

    Parameters
    ----------
    cameras : CameraArrays or sequence of Camera
        The ``C`` cameras, in the order of the view axis.
    pixels : (..., C, 2) array
        Observed (distorted) pixels; NaN where a view does not see the point.
    weights : (..., C) array, optional
        Per-view weights (detection confidences); 0 or NaN drops a view. Default 1.
    min_views : int
        Fewest views a point needs (at least 2).

    Returns
    -------
    (..., 3) array
        World points in the extrinsics' unit; NaN where fewer than ``min_views`` views
        see the point or the system is degenerate.
    """
    if min_views < 2:
        raise ValueError(f"min_views must be >= 2, got {min_views}")
    cams = _arrays(cameras)
    pix = np.asarray(pixels, dtype=np.float64)
    n_cams = cams.rotation.shape[0]
    if pix.ndim < 2 or pix.shape[-2:] != (n_cams, 2):
        raise ValueError(f"pixels have shape {pix.shape}; expected (..., {n_cams}, 2)")
    lead = pix.shape[:-2]
    if weights is None:
        w = np.ones(pix.shape[:-1])
    else:
        w = np.broadcast_to(np.asarray(weights, dtype=np.float64), pix.shape[:-1])
    xy = undistort(cams, pix)
    seen = np.isfinite(xy).all(axis=-1) & np.isfinite(w) & (w > 0)
    w = np.where(seen, w, 0.0)
    xy = np.where(seen[..., None], xy, 0.0)
    proj = np.concatenate([cams.rotation, cams.translation[:, :, None]], axis=2)  # (C, 3, 4)
    rows = np.stack(
        [
            xy[..., 0, None] * proj[:, 2] - proj[:, 0],
            xy[..., 1, None] * proj[:, 2] - proj[:, 1],
        ],
        axis=-2,
    )  # (..., C, 2, 4)
    a = (rows * w[..., None, None]).reshape(-1, 2 * n_cams, 4)
    # the smallest eigenvector of A.T A is A's last right singular vector; eigh on the
    # 4x4 normal matrix is twice as fast as the SVD and as accurate while the two smallest
    # singular values are apart (any point seen from two distinct centres)
    _, vecs = np.linalg.eigh(np.einsum("nki,nkj->nij", a, a))
    h = vecs[:, :, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        points = h[:, :3] / h[:, 3:4]
    points = points.reshape(*lead, 3)
    enough = seen.sum(axis=-1) >= min_views
    ok = enough & np.isfinite(points).all(axis=-1)
    return np.where(ok[..., None], points, np.nan)


def reprojection_error(
    cameras: CameraArrays | Sequence[Camera], points: np.ndarray, pixels: np.ndarray
) -> np.ndarray:
    """Pixel distance between observations and the projections of world points.

    Parameters
    ----------
    cameras : CameraArrays or sequence of Camera
    points : (..., 3) array
        World points (one per observation group).
    pixels : (..., C, 2) array
        Observations; NaN where missing.

    Returns
    -------
    (..., C) array
        Distances in pixels; NaN where the observation or the point is missing, or the
        point is behind the camera.
    """
    cams = _arrays(cameras)
    pred = project(cams, np.asarray(points, dtype=np.float64)[..., None, :])
    diff = pred - np.asarray(pixels, dtype=np.float64)
    return np.sqrt(np.sum(diff * diff, axis=-1))
