"""Compiled (numba) engine for direct 3D observations.

The numpy engine (:mod:`pipeline.solve.solver`) runs many frames in lockstep so that each
numpy call is wide; its cost is bound by numpy's per-call and per-temporary overhead on
small arrays. This engine runs the same algorithm one frame at a time in compiled loops:
forward kinematics joint by joint, the normal equations from subtree moments, and a
leaves-first factorization of the tree-sparse normal matrix. Kernels compile on first use
and are cached on disk (numba's ``cache=True``), so later processes load them.
"""

from __future__ import annotations

import numpy as np

from pipeline.solve.compiled.forward import LOSS_CODES
from pipeline.solve.compiled.frames import solve_frames_kernel
from pipeline.solve.compiled.tables import tables
from pipeline.solve.problem import Problem
from pipeline.solve.result import FitResult

__all__ = ["solve_compiled"]


def solve_compiled(
    prob: Problem,
    q0: np.ndarray,
    root_pos0: np.ndarray,
    root_quat0: np.ndarray,
    chained: bool,
    velocity: bool = False,
    kabsch: bool = False,
) -> FitResult:
    """Solve a 3D problem frame by frame.

    Parameters
    ----------
    prob : Problem
        With the :class:`~pipeline.solve.mappers.Identity3D` mapper.
    q0, root_pos0, root_quat0 : (T0, N), (T0, 3), (T0, 4)
        Clamped starting poses: one per frame, or one for every frame that is not
        warm-started (``T0 == 1``).
    chained : bool
        Warm-start every frame from the one before.
    velocity : bool
        Constant-velocity warm start (with ``chained``).
    kabsch : bool
        Cold-start the root of every frame that is not warm-started by a rigid fit of the
        starting pose to its targets (``SolverConfig.cold_root == "kabsch"``).

    Returns
    -------
    FitResult
        Floats in ``config.dtype`` (values beyond its range clipped to its largest).
    """
    cfg = prob.config
    tb = tables(prob.plan)
    t = prob.n_frames
    n = prob.plan.n_dofs
    q = np.empty((t, n))
    rp = np.empty((t, 3))
    rq = np.empty((t, 4))
    iterations = np.zeros(t, np.int32)
    converged = np.zeros(t, np.bool_)
    active = np.zeros((t, n), np.bool_)
    nj = prob.plan.n_joints
    fitted = np.empty((t, nj, 3))
    joint_rot = np.empty((t, nj, 4))
    residuals = np.empty((t, nj))
    stats = np.zeros((t, 3))
    if t:
        solve_frames_kernel(
            tb,
            np.ascontiguousarray(prob.obs[:, 0], dtype=np.float64),
            np.ascontiguousarray(prob.weight[:, 0], dtype=np.float64),
            np.ascontiguousarray(q0, dtype=np.float64),
            np.ascontiguousarray(root_pos0, dtype=np.float64),
            np.ascontiguousarray(root_quat0, dtype=np.float64),
            chained,
            velocity,
            kabsch,
            cfg.n_iterations,
            cfg.mode == "gn",
            float(cfg.neutral_weight),
            float(cfg.damping),
            float(cfg.lm_initial_damping),
            float(cfg.position_tolerance),
            float(cfg.angle_tolerance),
            LOSS_CODES[cfg.loss],
            float(cfg.loss_scale),
            q,
            rp,
            rq,
            iterations,
            converged,
            active,
            fitted,
            joint_rot,
            residuals,
            stats,
        )
    return FitResult(
        dof_values=q,
        root_position=rp,
        root_orientation=rq,
        joint_rotation=joint_rot,
        fitted_positions=fitted,
        residuals=residuals,
        rms_error=stats[:, 0],
        max_error=stats[:, 1],
        iterations=iterations,
        converged=converged,
        limit_active=active,
        observed=stats[:, 2].astype(np.int32),
    ).astype(cfg.np_dtype)
