"""The solver's per-frame output."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np

__all__ = ["FitResult", "cast_rows"]


@dataclass(frozen=True, eq=False)
class FitResult:
    """Fitted poses and diagnostics of ``T`` frames.

    Fields are named as the fit store's variables (:data:`pipeline.store.fit.VARIABLES`),
    singular: one name per quantity from the solver to the store.

    Attributes
    ----------
    dof_value : (T, n_dofs)
        Solver coordinates (rad, or length units for slides).
    root_position : (T, 3)
        Root pose position (length units); zeros for a fixed base.
    root_orientation : (T, 4)
        Root pose orientation ``(w, x, y, z)``; identity for a fixed base.
    joint_rotation : (T, n_joints, 4)
        Each joint's rotation relative to its rest frame, ``(w, x, y, z)``: the canonical
        pose (clamped to the joint's limits).
    fitted_position : (T, n_joints, 3)
        World keypoints of the fitted pose.
    residual : (T, n_joints)
        Distance between observation and fit (length units; pixels for 2D views, the
        root mean square over the views that observed the keypoint); NaN where missing.
    rms_error, max_error : (T,)
        Root mean square and largest of the residuals; 0 where nothing was observed.
    iterations : (T,) int
        Steps taken.
    converged : (T,) bool
        ``stop_reason == 0``: the frame reached a stationary point within
        ``n_iterations``.
    stop_reason : (T,) int8
        Why the frame stopped, a code of :data:`pipeline.solve.rules.STOP_REASONS`:
        0 ``converged`` (the update fell under the tolerances, or the objective stopped
        decreasing), 1 ``max_iterations`` (the cap), 2 ``stalled`` (the LM damping blew
        up, or the objective or pose was not finite), 3 ``no_observations`` (no keypoint
        observed: the pose is the prior's).
    objective : (T,)
        Objective of the fitted pose (robust loss of the weighted residuals plus the
        neutral prior, with the effective ``neutral_weight``).
    limit_active : (T, n_dofs) bool
        A limit clamp changed the DOF on the last step.
    observed : (T,) int
        Number of observed keypoints (over all views).
    dof_std : (T, n_dofs), optional
        Standard deviation of each DOF (rad or length units): the smoother's posterior
        with ``temporal="smooth"``, the frame's own (inverse normal matrix times the
        residual variance) with ``"none"`` (:mod:`pipeline.solve.temporal`).
    dof_velocity, dof_acceleration : (T, n_dofs), optional
        From the motion model, per s and per s^2 (NaN with ``temporal="none"``).
    dof_observable : (T, n_dofs) bool, optional
        Observed keypoints constrain the DOF in the frame
        (:data:`pipeline.solve.temporal.uncertainty.OBSERVABLE_MIN`).
    root_position_std, root_orientation_std : (T, 3), optional
        The root's (length units; rad, world-frame rotation increment); NaN for a fixed
        base.
    root_velocity, root_acceleration : (T, 3), optional
        Of the root position (length units per s, per s^2).
    root_angular_velocity, root_angular_acceleration : (T, 3), optional
        World-frame, rad/s and rad/s^2.

    The optional fields are None on results of the engines and filled by
    :func:`~pipeline.solve.solve_sequence` and :func:`~pipeline.solve.solve_frames`.
    """

    dof_value: np.ndarray
    root_position: np.ndarray
    root_orientation: np.ndarray
    joint_rotation: np.ndarray
    fitted_position: np.ndarray
    residual: np.ndarray
    rms_error: np.ndarray
    max_error: np.ndarray
    iterations: np.ndarray
    converged: np.ndarray
    stop_reason: np.ndarray
    objective: np.ndarray
    limit_active: np.ndarray
    observed: np.ndarray
    dof_std: np.ndarray | None = None
    dof_velocity: np.ndarray | None = None
    dof_acceleration: np.ndarray | None = None
    dof_observable: np.ndarray | None = None
    root_position_std: np.ndarray | None = None
    root_orientation_std: np.ndarray | None = None
    root_velocity: np.ndarray | None = None
    root_angular_velocity: np.ndarray | None = None
    root_acceleration: np.ndarray | None = None
    root_angular_acceleration: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.dof_value.shape[0])

    def astype(self, dtype) -> FitResult:
        """The result with its float arrays in ``dtype``.

        Values beyond ``dtype``'s range are clipped to its largest finite value (a far
        but finite fit stays finite); NaN stays NaN.

        Parameters
        ----------
        dtype : float32 or float64

        Returns
        -------
        FitResult
        """
        dtype = np.dtype(dtype)
        changes = {}
        for f in fields(self):
            a = getattr(self, f.name)
            if a is not None and a.dtype.kind == "f" and a.dtype != dtype:
                changes[f.name] = cast_rows(a, dtype)
        return replace(self, **changes)


def cast_rows(a: np.ndarray, dtype, keep: np.ndarray | None = None) -> np.ndarray:
    """Rows of a float array in float ``dtype``, in one gather and one cast.

    Values beyond ``dtype``'s range are clipped to its largest finite value (a far but
    finite fit stays finite); NaN stays NaN.

    Parameters
    ----------
    a : (R, ...) float
    dtype : float32 or float64
    keep : (R,) bool, optional
        Rows to keep, in order (default: every row). One ``np.compress``: a lane-cut call
        keeps hundreds of short runs, which a copy per run would pay for one by one.

    Returns
    -------
    (keep.sum(), ...) array of ``dtype``
    """
    dtype = np.dtype(dtype)
    src = a if keep is None else np.compress(keep, a, axis=0)
    with np.errstate(over="ignore"):
        b = src.astype(dtype, copy=False)
    if b is a:
        b = a.copy()
    big = np.finfo(dtype).max
    # one cheap pass; only overflowed (or already infinite) values are fixed
    if big < np.finfo(src.dtype).max and not np.isfinite(b).all():
        over = np.isinf(b) & np.isfinite(src)
        b[over] = np.copysign(big, src[over])
    return b
