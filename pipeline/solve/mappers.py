"""Observation mappers: how a world keypoint becomes what the tracker measured.

A mapper turns world positions ``(S, J, 3)`` into observations ``(S, C, J, d)`` (``C``
views of dimension ``d``) and gives the Jacobian of that map ``(S, C, J, d, 3)``. The
solver multiplies keypoint Jacobians by it, so every view is fitted jointly.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pipeline.cameras.camera import Camera as CalibratedCamera
from pipeline.cameras.lens_projection import pack, project, project_jacobian
from pipeline.cameras.rig_scale import rig_pixel_scale
from pipeline.cameras.triangulate import triangulate
from pipeline.errors import CameraError

__all__ = [
    "CalibratedCameras",
    "Identity3D",
    "Mapper",
    "XYView",
    "as_mapper",
]


class Mapper:
    """Base class: ``n_views`` views of ``dim`` coordinates each."""

    n_views: int = 1
    dim: int = 3
    #: Residual units per length unit (pixels per metre through cameras): the prior's and
    #: the coordinate tasks' weights, stated against length residuals, are multiplied by
    #: its square so that they weigh as much against pixels as against lengths.
    residual_scale: float = 1.0

    def project(self, positions: np.ndarray) -> np.ndarray:  # pragma: no cover - interface
        """Observations ``(S, C, J, d)`` of world positions ``(S, J, 3)``."""
        raise NotImplementedError

    def jacobian(self, positions: np.ndarray) -> np.ndarray | None:  # pragma: no cover
        """``(S, C, J, d, 3)`` derivative of :meth:`project`; ``None`` means identity."""
        raise NotImplementedError

    def world_targets(self, obs: np.ndarray, weight: np.ndarray):
        """World keypoints and weights recovered from observations, or ``None``.

        ``obs (S, C, J, d)`` and ``weight (S, C, J)`` (0 = missing) give ``(S, J, 3)``
        points and ``(S, J)`` weights for the cold start's rigid (Kabsch) root fit;
        ``None`` (the default) when the observations do not determine them.
        """
        return None


class Identity3D(Mapper):
    """3D keypoints observed directly (the default)."""

    n_views, dim = 1, 3

    def project(self, positions: np.ndarray) -> np.ndarray:
        """Positions with a view axis: ``(S, 1, J, 3)``."""
        return positions[:, None]

    def jacobian(self, positions: np.ndarray) -> None:
        """Identity (``None``)."""
        return None

    def world_targets(self, obs: np.ndarray, weight: np.ndarray):
        """The observations themselves (float64)."""
        return obs[:, 0].astype(np.float64), weight[:, 0].astype(np.float64)


class XYView(Mapper):
    """2D keypoints on the world XY plane: ``(x, y, z) -> (x, y)``."""

    n_views, dim = 1, 2

    def project(self, positions: np.ndarray) -> np.ndarray:
        """``(S, 1, J, 2)``."""
        return positions[:, None, :, :2]

    def jacobian(self, positions: np.ndarray) -> np.ndarray:
        """Constant selection of x and y."""
        sel = np.zeros((2, 3), positions.dtype)
        sel[0, 0] = sel[1, 1] = 1.0
        return np.broadcast_to(sel, positions.shape[:1] + (1,) + positions.shape[1:2] + (2, 3))


class CalibratedCameras(Mapper):
    """Calibrated cameras with lens distortion (:class:`pipeline.cameras.Camera`).

    Projection and Jacobian are :mod:`pipeline.cameras.lens_projection`'s (OpenCV's radtan and
    fisheye models); points at or behind a camera give NaN pixels (dropped as missing)
    and zero Jacobian rows.

    ``pixel_scale`` (pixels per length unit, :attr:`Mapper.residual_scale`) defaults to
    :func:`pipeline.cameras.rig_scale.rig_pixel_scale` of the cameras (1 for one camera,
    whose depth nothing fixes).
    """

    dim = 2

    def __init__(self, cameras: Sequence[CalibratedCamera], pixel_scale: float | None = None):
        if not cameras:
            raise CameraError("at least one camera is needed")
        self.cameras = tuple(cameras)
        self.n_views = len(self.cameras)
        self._arrays = pack(self.cameras)
        if pixel_scale is None:
            pixel_scale = rig_pixel_scale(self.cameras)
        if pixel_scale is not None and not (np.isfinite(pixel_scale) and pixel_scale > 0):
            raise CameraError(
                "pixel_scale: must be a positive number of pixels per length unit, "
                f"not {pixel_scale!r}"
            )
        self.residual_scale = 1.0 if pixel_scale is None else float(pixel_scale)

    def project(self, positions: np.ndarray) -> np.ndarray:
        """Pixels ``(S, C, J, 2)`` of world positions ``(S, J, 3)``."""
        pix = project(self._arrays, positions[:, :, None, :])  # (S, J, C, 2)
        return pix.transpose(0, 2, 1, 3).astype(positions.dtype, copy=False)

    def jacobian(self, positions: np.ndarray) -> np.ndarray:
        """``(S, C, J, 2, 3)`` exact derivative of :meth:`project`."""
        _, jac = project_jacobian(self._arrays, positions[:, :, None, :])
        return jac.transpose(0, 2, 1, 3, 4).astype(positions.dtype, copy=False)

    def world_targets(self, obs: np.ndarray, weight: np.ndarray):
        """Keypoints seen by two or more views, triangulated (weighted DLT).

        :func:`pipeline.cameras.triangulate`; a point's weight is the mean of its seeing
        views'. ``None`` for one camera.
        """
        if self.n_views < 2:
            return None
        w = np.asarray(weight, dtype=np.float64).transpose(0, 2, 1)  # (S, J, C)
        pix = np.where(
            (w > 0)[..., None], np.asarray(obs, np.float64).transpose(0, 2, 1, 3), np.nan
        )
        points = triangulate(self._arrays, pix, w)
        seen = np.isfinite(points).all(-1)
        mean_w = w.sum(-1) / np.maximum((w > 0).sum(-1), 1)
        return np.where(seen[..., None], points, 0.0), np.where(seen, mean_w, 0.0)


def as_mapper(
    mapper: Mapper | CalibratedCamera | Sequence[CalibratedCamera] | None,
) -> Mapper:
    """Normalize the ``mapper`` argument of the solver entry points."""
    if mapper is None:
        return Identity3D()
    if isinstance(mapper, Mapper):
        return mapper
    if isinstance(mapper, CalibratedCamera):
        return CalibratedCameras([mapper])
    if isinstance(mapper, Sequence) and all(isinstance(c, CalibratedCamera) for c in mapper):
        return CalibratedCameras(mapper)
    raise TypeError(
        "mapper must be None (3D), XYView(), a pipeline.cameras.Camera or a list of them, "
        f"not {type(mapper).__name__}"
    )
