"""Poses of sampled frames and the shared body parameters, solved jointly.

Objective over the calibration frames ``f`` (``theta`` the shared parameters of
:mod:`pipeline.calibrate.params`, ``x_f`` each frame's pose)::

    sum_f sum_k w_fk |target_fk - h(p_k(x_f; theta))|^2 + neutral prior on q_f
        + k**2 sum_i lambda_i (theta_i - theta0_i)^2

``h`` is how a keypoint is observed (:mod:`pipeline.calibrate.data_term`): the identity
for 3D tracks, or each calibrated camera's projection for 2D views (residuals in pixels,
the cameras held fixed), and ``k`` the observations' units per length unit there (1 in
3D, about ``f / depth`` pixels per length unit through cameras), so a prior weight keeps
its meaning of so many observations whatever the data are measured in. The neutral pose
prior is multiplied by ``k**2`` as well: in pixels the solver's own weight (set in the
plan's length unit) would leave barely observed DOFs free to wander during the joint
steps.

Each outer iteration first fits every frame's pose with the public solver
(:func:`pipeline.solve.solve_frames`, warm-started from the last poses; limits are handled
there), then takes one Gauss-Newton step in ``theta`` with the poses eliminated:
``S = C - sum_f B_f^T A_f^{-1} B_f`` (the Schur complement of the per-frame pose blocks
``A_f``, as in bundle adjustment), ``S dtheta = g_s - sum_f B_f^T A_f^{-1} g_f``. At the
pose optimum ``g_f`` is zero and this is the Gauss-Newton step of the reduced problem
(variable projection), so it converges in a few iterations. ``method="alternation"``
drops the coupling (``S = C``): the linear shape step with the poses held fixed, which
crawls along the pose/shape valley (``benchmarks/calibration.py`` measures both).

Keypoint positions are linear in the offsets for fixed rotations: ``d p_k / d
offset_j = R_in(j)`` (the world rotation of ``j``'s parent after its DOFs) for every ``j``
on the path from the root to ``k``, so the shape Jacobian is exact. The pose Jacobians come
from :func:`pipeline.kinematics.fk_jacobian.jacobian_from_state`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from pipeline.calibrate.data_term import Observed
from pipeline.calibrate.params import Parameters
from pipeline.kinematics.fk_jacobian import fk_state, jacobian_from_state
from pipeline.kinematics.plan_arrays import KinematicModel, compile_plan, with_offsets
from pipeline.kinematics.rotations import expmap, matrix_to_quat, quat_to_matrix
from pipeline.solve import FitResult, SolverConfig, solve_frames
from pipeline.solve.mappers import Mapper

__all__ = ["METHODS", "ShapeSolution", "solve_shape"]

#: Shape steps :func:`solve_shape` knows.
METHODS = ("schur", "alternation")


@dataclass(frozen=True)
class ShapeSolution:
    """The shared parameters after the joint solve.

    Attributes
    ----------
    theta : (P,) array
    covariance : (P, P) array
        ``sigma**2 S^{-1}``, ``sigma**2`` the residual variance per coordinate.
    fit : FitResult
        The poses of the calibration frames under ``theta``.
    template_fit : FitResult
        The same frames fitted with the template.
    iterations : int
        Shape steps taken.
    converged : bool
        The last step moved every scale by less than ``tolerance`` (and every offset by
        less than ``tolerance`` times the body size).
    history : tuple of float
        The objective after each iteration (the first with the template).
    observed_params : (P,) bool
        Parameters with at least one observation below them.
    """

    theta: np.ndarray
    covariance: np.ndarray
    fit: FitResult
    template_fit: FitResult
    iterations: int
    converged: bool
    history: tuple[float, ...]
    observed_params: np.ndarray


def _ancestors(plan) -> np.ndarray:
    """``(J, J)`` with ``[k, j] = 1`` when ``j`` is ``k`` or one of its ancestors."""
    parents = plan.parent_indices
    n = len(parents)
    out = np.zeros((n, n))
    for k in range(n):
        j = k
        while j >= 0:
            out[k, j] = 1.0
            j = parents[j]
    return out


def _observed(params: Parameters, weights: np.ndarray) -> np.ndarray:
    """``(P,)`` parameters that some observed keypoint depends on."""
    anc = _ancestors(params.template)
    seen = (weights > 0).any(axis=0).astype(float)  # (J,)
    below = (anc * seen[:, None]).sum(axis=0) > 0  # joint j has an observed keypoint under it
    basis = np.abs(params.offset_basis()).sum(axis=2) > 0  # (J, P)
    return (basis & below[:, None]).any(axis=0)


class _Poses(NamedTuple):
    """Poses of the calibration frames: root position, root rotation matrix, DOFs."""

    root_position: np.ndarray  # (S, 3)
    root_rotation: np.ndarray  # (S, 3, 3)
    q: np.ndarray  # (S, N)

    @classmethod
    def of(cls, fit: FitResult) -> _Poses:
        return cls(
            np.array(fit.root_position, np.float64),
            quat_to_matrix(np.asarray(fit.root_orientation, np.float64)),
            np.array(fit.dof_value, np.float64),
        )

    def moved(self, step: np.ndarray, n_root: int, plan) -> _Poses:
        """The poses after a solver-state step ``(S, n_root + N)``, clamped to limits."""
        q = np.clip(self.q + step[:, n_root:], plan.lower, plan.upper)
        if not n_root:
            return _Poses(self.root_position, self.root_rotation, q)
        rot = np.matmul(expmap(step[:, 3:6]), self.root_rotation)
        return _Poses(self.root_position + step[:, :3], rot, q)

    def as_initial(self) -> dict[str, np.ndarray]:
        """The solver's ``initial`` dict."""
        return {
            "dof_value": self.q,
            "root_position": self.root_position,
            "root_orientation": matrix_to_quat(self.root_rotation),
        }


def _model(params: Parameters, theta: np.ndarray) -> KinematicModel:
    """The compiled plan of ``theta``: the template's arrays with its offsets (no recompile)."""
    return with_offsets(compile_plan(params.template, np.float64), params.offsets(theta))


def _objective(params: Parameters, poses: _Poses, obs: Observed, theta, nw):
    """Total objective and the FK state of ``poses`` under the plan of ``theta``.

    Only the offsets depend on ``theta`` (:meth:`Parameters.apply`): neutral pose, limits
    and weights are the template's.
    """
    plan, model = params.template, _model(params, theta)
    st = fk_state(model, poses.q, poses.root_position, poses.root_rotation)
    data = obs.cost(st.positions)
    dq = poses.q - plan.neutral
    pose = nw * float(np.einsum("sn,n->", dq**2, plan.dof_weight_scalers))
    d = theta - params.theta0
    return data + pose + float(obs.prior_scale * params.prior_precision @ d**2), st


def _normal(params: Parameters, poses: _Poses, st, obs: Observed, theta, nw, schur):
    """The reduced shape system ``(S, rhs)`` and the pose step ``dp = xg - xb @ dtheta``."""
    plan, model = params.template, _model(params, theta)
    q, rr = poses.q, poses.root_rotation
    s, nj = q.shape[0], plan.n_joints
    parents = plan.parent_indices
    r_in = np.empty((s, nj, 3, 3))
    r_in[:, parents >= 0] = st.rotations[:, parents[parents >= 0]]
    r_in[:, parents < 0] = rr[:, None] if model.free_base else np.eye(3)
    rb = np.matmul(r_in, params.offset_basis().transpose(0, 2, 1))  # (S, J, 3, P)
    js = np.tensordot(_ancestors(plan), rb, axes=([1], [1])).transpose(1, 0, 2, 3)
    jsw = obs.weighted_chain(st.positions, js)  # (S, M, P)
    rw = obs.weighted_residual(st.positions)  # (S, M)
    prior = obs.prior_scale * params.prior_precision
    flat = jsw.reshape(-1, jsw.shape[-1])
    c = flat.T @ flat + np.diag(prior)
    g = flat.T @ rw.ravel() - prior * (theta - params.theta0)
    jp = jacobian_from_state(model, st)
    nr = model.n_root
    jpw = obs.weighted_chain(st.positions, jp)
    gp = np.matmul(jpw.transpose(0, 2, 1), rw[..., None])[..., 0]
    gp[:, nr:] -= nw * plan.dof_weight_scalers * (q - plan.neutral)
    active = np.zeros(gp.shape, bool)  # at a limit and pushed outward: held there
    active[:, nr:] = ((q <= plan.lower) & (gp[:, nr:] < 0)) | ((q >= plan.upper) & (gp[:, nr:] > 0))
    jpw = jpw * ~active[:, None, :]
    gp[active] = 0.0
    a = np.matmul(jpw.transpose(0, 2, 1), jpw)
    pose_prior = np.concatenate([np.zeros(nr), nw * plan.dof_weight_scalers])
    diag = pose_prior + active + 1e-9 * np.trace(a, axis1=1, axis2=2)[:, None] / a.shape[1]
    idx = np.arange(a.shape[1])
    a[:, idx, idx] += diag
    b = np.matmul(jpw.transpose(0, 2, 1), jsw)  # (S, n, P)
    x = np.linalg.solve(a, np.concatenate([b, gp[..., None]], axis=2))
    if not schur:  # alternation: the poses' own GN step, then the shape step with poses held
        return c, g, np.zeros_like(x[..., :-1]), x[..., -1]
    b2 = b.reshape(-1, b.shape[-1])
    reduced = c - b2.T @ x[..., :-1].reshape(b2.shape)
    rhs = g - b2.T @ x[..., -1].ravel()
    return reduced, rhs, x[..., :-1], x[..., -1]


def _step_size(params: Parameters, step: np.ndarray) -> float:
    """Largest change, scales as they are and offsets in body sizes."""
    if step.size == 0:
        return 0.0
    scale = np.ones_like(step)
    scale[params.n_global + len(params.group_names) :] = params.size
    return float(np.max(np.abs(step) / scale))


def solve_shape(
    params: Parameters,
    targets: np.ndarray,
    weights: np.ndarray,
    config: SolverConfig | None = None,
    *,
    method: str = "schur",
    max_iterations: int = 30,
    tolerance: float = 1e-5,
    mapper: Mapper | None = None,
) -> ShapeSolution:
    """Fit the shared parameters and the poses of the calibration frames.

    Parameters
    ----------
    params : Parameters
    targets : (F, J, 3) array, or pixels (F, J, 2) / (F, C, J, 2) with ``mapper``
        Keypoints of the calibration frames (length units), NaN where missing.
    weights : (F, J) array, or (F, C, J) with cameras
        Observation weights (0 where missing); the joints' weight scalers multiply them.
    config : SolverConfig, optional
        The per-frame pose solver's settings (the neutral prior comes from it).
    method : {"schur", "alternation"}
    max_iterations : int
    tolerance : float
        Stop when a step changes no scale by more than this (offsets: times the size).
    mapper : Mapper, optional
        How the keypoints are observed (:mod:`pipeline.solve.mappers`): None for 3D,
        :class:`~pipeline.solve.mappers.CalibratedCameras` (residuals in pixels, the
        cameras held fixed) or :class:`~pipeline.solve.XYView` (the image plane).

    Returns
    -------
    ShapeSolution
    """
    config = config or SolverConfig()
    if method not in METHODS:
        raise ValueError(f"method: {method!r} is not one of {', '.join(METHODS)}")
    targets = np.asarray(targets, np.float64)
    observed = np.where(np.isfinite(targets).all(axis=-1), np.nan_to_num(weights), 0.0)
    # what the solver applies: the joints' weight scalers on top
    obs = Observed(targets, observed * params.template.joint_weight_scalers, mapper)
    theta = params.theta0
    nw = config.effective(params.template)[0]
    template_fit = solve_frames(params.template, targets, observed, config, mapper=mapper)
    poses = _Poses.of(template_fit)
    obs.set_prior_scale(np.asarray(template_fit.fitted_position, np.float64))
    nw *= obs.prior_scale  # the pose prior too: the same weight relative to the data
    template = params.template  # neutral pose, limits, base: the plan of every theta's
    cost, st = _objective(params, poses, obs, theta, nw)
    history, converged, it = [cost], False, 0
    n_root = 0 if template.fixed_base else 6
    for it in range(1, max_iterations + 1):  # noqa: B007 (the count is reported)
        reduced, rhs, xb, xg = _normal(params, poses, st, obs, theta, nw, method == "schur")
        step = np.linalg.lstsq(reduced, rhs, rcond=None)[0]
        pose_step = xg - xb @ step
        alpha, accepted = 1.0, False
        for _ in range(10):
            trial = theta + alpha * step
            trial_poses = poses.moved(alpha * pose_step, n_root, template)
            trial_cost, trial_st = _objective(params, trial_poses, obs, trial, nw)
            if trial_cost <= cost:
                accepted = True
                break
            alpha /= 2
        if not accepted:
            converged = _step_size(params, step) < 10 * tolerance
            break
        theta, poses, cost, st = trial, trial_poses, trial_cost, trial_st
        history.append(cost)
        if _step_size(params, alpha * step) < tolerance or history[-2] - cost <= 1e-7 * cost:
            converged = True
            break
    reduced, _, _, _ = _normal(params, poses, st, obs, theta, nw, True)
    plan = params.apply(theta)
    fit = solve_frames(plan, targets, observed, config, initial=poses.as_initial(), mapper=mapper)
    n_free = fit.dof_value.size + (6 * len(fit.dof_value) if not plan.fixed_base else 0)
    dof = max(obs.n_observations - n_free - params.n_params, 1)
    sigma2 = obs.cost(np.asarray(fit.fitted_position, np.float64)) / dof
    covariance = sigma2 * np.linalg.pinv(reduced)
    return ShapeSolution(
        theta=theta,
        covariance=covariance,
        fit=fit,
        template_fit=template_fit,
        iterations=it,
        converged=converged,
        history=tuple(history),
        observed_params=_observed(params, obs.joint_weights()),
    )
