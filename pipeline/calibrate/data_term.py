"""The calibration's data term: keypoints seen in 3D, or through calibrated cameras.

The joint solve of :mod:`pipeline.calibrate.solve` needs, for the calibration frames, the
weighted residuals of the observations and the weighted Jacobians of the observations
with respect to any of the body's variables. :class:`Observed` gives both for one
observation model (a :class:`pipeline.solve.mappers.Mapper`):

- 3D keypoints (:class:`~pipeline.solve.mappers.Identity3D`): the residual is
  ``target - p`` in length units, the chain the identity;
- pixels of calibrated cameras (:class:`~pipeline.solve.mappers.CalibratedCameras`) or
  the image plane (:class:`~pipeline.solve.mappers.XYView`): the residual is ``pixel -
  project(p)``, and a 3D Jacobian ``d p / d x`` becomes ``d project / d p @ d p / d x``
  (the mapper's exact projection derivative, lens distortion included).

A point at or behind a camera projects to NaN: its residual and its Jacobian rows are 0,
as in the pose solver.
"""

from __future__ import annotations

import numpy as np

from pipeline.solve.mappers import Identity3D, Mapper, as_mapper

__all__ = ["Observed"]


class Observed:
    """Observations of the calibration frames and the map that produced them.

    Parameters
    ----------
    targets : (S, J, 3), (S, J, 2) or (S, C, J, 2) array
        Keypoints (3D, length units) or pixels, NaN where missing.
    weights : (S, J) or (S, C, J) array
        Observation weights times the joints' weight scalers (0 where missing).
    mapper : Mapper, optional
        How a world keypoint is observed (default: 3D).

    Attributes
    ----------
    targets : (S, C, J, d) array
    weights : (S, C, J) array
        0 wherever a coordinate of the target is not finite.
    mapper : Mapper
    prior_scale : float
        ``k**2``, the observations' squared units per squared length unit, by which the
        calibration's prior weights are multiplied (:meth:`set_prior_scale`; default 1).
    """

    def __init__(self, targets: np.ndarray, weights: np.ndarray, mapper: Mapper | None = None):
        self.mapper = as_mapper(mapper)
        t = np.asarray(targets, np.float64)
        w = np.asarray(weights, np.float64)
        if t.ndim == 3:
            t, w = t[:, None], w[:, None]
        self.targets = t
        self.weights = np.where(np.isfinite(t).all(axis=-1), np.nan_to_num(w), 0.0)
        self.prior_scale = 1.0

    def set_prior_scale(self, positions: np.ndarray) -> None:
        """Set :attr:`prior_scale`, ``k**2``, from world keypoints ``(S, J, 3)``.

        ``k**2`` is the weighted mean over the observations of ``|d h / d p|_F**2 / d``
        (``h`` the projection, ``d`` its dimension): a pinhole's ``(f / depth)**2``. It is
        1 for 3D keypoints and for the image plane.
        """
        jac = self.mapper.jacobian(np.asarray(positions, np.float64))
        if jac is None:
            self.prior_scale = 1.0
            return
        norm2 = np.nan_to_num((jac**2).sum(axis=(-2, -1))) / self.dim  # (S, C, J)
        total = float(self.weights.sum())
        self.prior_scale = float((self.weights * norm2).sum() / total) if total > 0 else 1.0

    @property
    def is_3d(self) -> bool:
        """Whether the keypoints are observed directly in 3D."""
        return isinstance(self.mapper, Identity3D)

    @property
    def dim(self) -> int:
        """Coordinates per observation (3, or 2 for pixels)."""
        return int(self.targets.shape[-1])

    @property
    def n_observations(self) -> int:
        """Observed coordinates (``dim`` per observed keypoint and view)."""
        return self.dim * int((self.weights > 0).sum())

    def joint_weights(self) -> np.ndarray:
        """``(S, J)`` each frame's weight per joint, summed over the views."""
        return self.weights.sum(axis=1)

    def predict(self, positions: np.ndarray) -> np.ndarray:
        """``(S, C, J, d)`` observations of world keypoints ``(S, J, 3)``."""
        return self.mapper.project(np.asarray(positions, np.float64))

    def residual(self, positions: np.ndarray) -> np.ndarray:
        """``(S, C, J, d)`` target minus prediction, 0 where missing or not projectable."""
        r = np.nan_to_num(self.targets - self.predict(positions))
        return np.where((self.weights > 0)[..., None], r, 0.0)

    def cost(self, positions: np.ndarray) -> float:
        """``sum w |target - prediction|^2`` (observation units squared)."""
        r = self.residual(positions)
        return float(np.einsum("scj,scj->", self.weights, (r**2).sum(axis=-1)))

    def weighted_residual(self, positions: np.ndarray) -> np.ndarray:
        """``(S, M)`` ``sqrt(w) * residual``, ``M = C * J * d``."""
        r = self.residual(positions) * np.sqrt(self.weights)[..., None]
        return r.reshape(r.shape[0], -1)

    def weighted_chain(self, positions: np.ndarray, jac: np.ndarray) -> np.ndarray:
        """``(S, M, X)`` ``sqrt(w) * d observation / d x`` from ``jac = d p / d x``.

        Parameters
        ----------
        positions : (S, J, 3) array
            World keypoints where the projection is linearised.
        jac : (S, J, 3, X) array
            Derivative of the world keypoints with respect to ``X`` variables.
        """
        sw = np.sqrt(self.weights)[..., None, None]  # (S, C, J, 1, 1)
        d = self.mapper.jacobian(np.asarray(positions, np.float64))
        if d is None:
            out = jac[:, None] * sw
        else:
            seen = np.isfinite(d).all(axis=(-2, -1))[..., None, None]
            d = np.where(seen, d, 0.0)
            out = np.einsum("scjab,sjbx->scjax", d, jac) * sw
        return out.reshape(out.shape[0], -1, jac.shape[-1])
