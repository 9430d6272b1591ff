"""The named bundles the compiled kernel takes, built in one place.

:func:`pipeline.solve.compiled.frames.solve_frames_kernel` (3D) and the projection kernel
(:mod:`pipeline.solve.compiled.projection`) take the body plan's
:class:`~pipeline.solve.compiled.tables.Tables` and the same four bundles: :class:`Inputs`
(targets, weights, start poses), :class:`Settings` (the solver settings as plain scalars),
:class:`Workspace` (every scratch buffer of one frame's solve, allocated once per call)
and :class:`Outputs` (the per-frame results); the projection kernel takes the cameras and
:class:`PixelScratch` besides. Each has a builder here.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from pipeline.solve.compiled.tables import Tables
from pipeline.solve.config import SolverConfig
from pipeline.solve.rules import LOSS_CODES, initial_damping

__all__ = [
    "Inputs",
    "Outputs",
    "PixelScratch",
    "Settings",
    "Workspace",
    "outputs",
    "pixel_scratch",
    "settings",
    "task_arrays",
    "workspace",
]


class Inputs(NamedTuple):
    """Observations and start poses of ``T`` frames (float64, C-contiguous).

    Attributes
    ----------
    obs : (T, J, 3) or (T, C, J, 2)
        Targets (3D, or pixels of ``C`` cameras), ignored where ``weight`` is 0.
    weight : (T, J) or (T, C, J)
        Observation weights times joint weight scalers, 0 where missing.
    init_q, init_root_pos, init_root_quat : (T0, N), (T0, 3), (T0, 4)
        Starting poses, already clamped: one per frame, or one for all (``T0 == 1``).
    cold : (T,) bool
        The frame starts from ``init_*`` (and, with ``Settings.kabsch``, a rigid fit of
        its root) rather than from the frame before it. Always True for the first frame
        and for every frame without ``Settings.chained``; a chained solve of several
        sequences laid end to end sets it at each sequence's first frame.
    task_weight : (N,)
        Coordinate-task weights per DOF (0: no task; :mod:`pipeline.solve.tasks`).
    task_target : (T, N) or (1, N)
        Their targets per frame (one row: the same for every frame).
    """

    obs: np.ndarray
    weight: np.ndarray
    init_q: np.ndarray
    init_root_pos: np.ndarray
    init_root_quat: np.ndarray
    cold: np.ndarray
    task_weight: np.ndarray
    task_target: np.ndarray


class Settings(NamedTuple):
    """:class:`~pipeline.solve.config.SolverConfig` as kernel scalars.

    ``gn`` is ``mode == "gn"``; ``loss`` a code of :data:`~pipeline.solve.rules.LOSS_CODES`;
    ``lam0`` the starting damping (:func:`~pipeline.solve.rules.initial_damping`);
    ``neutral_weight``, ``position_tolerance`` and ``angle_floor`` the effective
    (size-scaled) values (:meth:`~pipeline.solve.config.SolverConfig.effective`);
    ``distance``: ``tolerance_on == "distance"`` (:func:`~pipeline.solve.rules.small_update`);
    ``chained``, ``velocity``, ``kabsch`` the warm/cold start rules; ``uncertainty``
    fills :class:`Outputs`' ``information``, ``inverse`` and ``moments``.
    """

    n_iterations: int
    gn: bool
    neutral_weight: float
    damping: float
    angle_floor: float
    lam0: float
    position_tolerance: float
    angle_tolerance: float
    distance: bool
    cost_tolerance: float
    loss: int
    loss_scale: float
    chained: bool
    velocity: bool
    kabsch: bool
    uncertainty: bool


class Workspace(NamedTuple):
    """Scratch buffers of one frame's solve (see the kernels for their meaning)."""

    rot: np.ndarray  # (J, 3, 3) joint frames
    org: np.ndarray  # (J, 3) joint origins
    pos: np.ndarray  # (J, 3) keypoints
    axes: np.ndarray  # (N + G, 3) DOF axes (coupled: screws' rotation parts) ...
    pivots: np.ndarray  # (N + G, 3) DOF pivots (coupled: screws' moment parts)
    tmp: np.ndarray  # (3, 3, 3)
    half: np.ndarray  # (2, N) half-angle cosines and sines of q ...
    half_new: np.ndarray  # (2, N) ... and of q_new
    res: np.ndarray  # (J, 3) residuals
    weff: np.ndarray  # (J,) effective weights
    mom: np.ndarray  # (J + 1, 16) subtree moments
    xi: np.ndarray  # (n_state, 6) screws
    f: np.ndarray  # (n_state, 6) Phi @ xi
    hd: np.ndarray  # (n_state,) normal matrix diagonal
    hc: np.ndarray  # (n_state, max_depth) DOF-ancestor entries
    hr: np.ndarray  # (n_state, 6) root entries
    g: np.ndarray  # (n_state,) gradient
    step: np.ndarray  # (n_state,)
    zd: np.ndarray  # (n_state,) inverse normal matrix on the pattern: diagonal ...
    zc: np.ndarray  # (n_state, max_depth) ... DOF-ancestor entries
    zr: np.ndarray  # (n_state, 6) ... root entries
    root_rot: np.ndarray  # (3, 3)
    q: np.ndarray  # (N,) current pose ...
    rp: np.ndarray  # (3,)
    rq: np.ndarray  # (4,)
    q_new: np.ndarray  # (N,) ... and the candidate
    rp_new: np.ndarray  # (3,)
    rq_new: np.ndarray  # (4,)
    act: np.ndarray  # (N,) bool clamp activity
    act_new: np.ndarray  # (N,) bool
    local: np.ndarray  # (J, 3) start keypoints with the root at the origin ...
    local_of: np.ndarray  # (1,) int64 ... of this start pose (-1: none yet)
    origin: np.ndarray  # (3,) zeros
    eye: np.ndarray  # (3, 3) identity
    prior: np.ndarray  # (2, N) the neutral prior's diagonal, and it plus the task weights


class Outputs(NamedTuple):
    """Per-frame results, named as :class:`~pipeline.solve.result.FitResult`'s fields.

    ``stats`` holds keypoint RMS, largest residual, number of observed keypoints and the
    objective of the solution; ``information``, ``inverse`` and ``moments`` are
    :func:`~pipeline.solve.compiled.precision.frame_precision`'s at it. The projection
    kernel fills the pose, iterations, stop reason, clamp activity and the uncertainty
    fields only; its keypoint fields and ``stats`` have no rows
    (:func:`outputs` with ``keypoints=False``).
    """

    dof_value: np.ndarray  # (T, N)
    root_position: np.ndarray  # (T, 3)
    root_orientation: np.ndarray  # (T, 4)
    joint_rotation: np.ndarray  # (T, J, 4)
    fitted_position: np.ndarray  # (T, J, 3)
    residual: np.ndarray  # (T, J)
    iterations: np.ndarray  # (T,) int32
    stop_reason: np.ndarray  # (T,) int8
    limit_active: np.ndarray  # (T, N) bool
    stats: np.ndarray  # (T, 4)
    information: np.ndarray  # (T, n_state) diagonal of J^T W J
    inverse: np.ndarray  # (T, n_state) diagonal of (J^T W J + P)^-1
    moments: np.ndarray  # (T, 3) sum w r^2, sum w, residual rows


class PixelScratch(NamedTuple):
    """Scratch of the projection kernel for ``C`` cameras (see its functions)."""

    res: np.ndarray  # (C, J, 2) pixel residuals
    weff: np.ndarray  # (C, J) effective weights
    pj: np.ndarray  # (C, J, 2, 3) projection Jacobians
    phi: np.ndarray  # (J + 1, 6, 6) screw blocks below each joint
    gm: np.ndarray  # (J + 1, 6) gradients below each joint


def task_arrays(prob) -> tuple[np.ndarray, np.ndarray]:
    """:class:`Inputs`' ``task_weight`` and ``task_target`` of a problem (zeros: no tasks)."""
    n = prob.model.n_dofs
    if prob.task_weight is None:
        return np.zeros(n), np.zeros((1, n))
    tw = np.ascontiguousarray(prob.task_weight, dtype=np.float64)
    return tw, np.ascontiguousarray(prob.task_target, dtype=np.float64)


def settings(
    config: SolverConfig,
    neutral_weight: float,
    position_tolerance: float,
    angle_floor: float,
    chained: bool,
    velocity: bool,
    kabsch: bool,
) -> Settings:
    """The kernel settings of ``config`` with its effective (size-scaled) values."""
    return Settings(
        n_iterations=int(config.n_iterations),
        gn=config.mode == "gn",
        neutral_weight=float(neutral_weight),
        damping=float(config.damping),
        angle_floor=float(angle_floor),
        lam0=float(initial_damping(config.mode, config.damping, config.lm_initial_damping)),
        position_tolerance=float(position_tolerance),
        angle_tolerance=float(config.angle_tolerance),
        distance=config.tolerance_on == "distance",
        cost_tolerance=float(config.cost_tolerance),
        loss=LOSS_CODES[config.loss],
        loss_scale=float(config.loss_scale),
        chained=bool(chained),
        velocity=bool(velocity),
        kabsch=bool(kabsch),
        uncertainty=bool(config.uncertainty or config.temporal == "smooth"),
    )


def workspace(tb: Tables) -> Workspace:
    """Fresh scratch buffers for the plan of ``tb``."""
    nj = tb.parent.shape[0]
    n = tb.dof_type.shape[0]
    ns = tb.n_root + n
    screws = n + tb.extra_joint.shape[0]  # a coupled plan's extra screw groups
    return Workspace(
        rot=np.empty((nj, 3, 3)),
        org=np.empty((nj, 3)),
        pos=np.empty((nj, 3)),
        axes=np.zeros((screws, 3)),
        pivots=np.zeros((screws, 3)),
        tmp=np.empty((3, 3, 3)),
        half=np.empty((2, n)),
        half_new=np.empty((2, n)),
        res=np.empty((nj, 3)),
        weff=np.empty(nj),
        mom=np.empty((nj + 1, 16)),
        xi=np.empty((ns, 6)),
        f=np.empty((ns, 6)),
        hd=np.empty(ns),
        hc=np.zeros((ns, tb.ancestors.shape[1])),
        hr=np.zeros((ns, 6)),
        g=np.empty(ns),
        step=np.empty(ns),
        zd=np.empty(ns),
        zc=np.zeros((ns, tb.ancestors.shape[1])),
        zr=np.zeros((ns, 6)),
        root_rot=np.empty((3, 3)),
        q=np.empty(n),
        rp=np.empty(3),
        rq=np.empty(4),
        q_new=np.empty(n),
        rp_new=np.empty(3),
        rq_new=np.empty(4),
        act=np.zeros(n, np.bool_),
        act_new=np.zeros(n, np.bool_),
        local=np.empty((nj, 3)),
        local_of=np.full(1, -1, np.int64),
        origin=np.zeros(3),
        eye=np.eye(3),
        prior=np.zeros((2, n)),
    )


def outputs(tb: Tables, t: int, keypoints: bool = True) -> Outputs:
    """Result buffers of ``t`` frames (without ``keypoints``: keypoint fields of no rows)."""
    nj = tb.parent.shape[0]
    n = tb.dof_type.shape[0]
    ns = tb.n_root + n
    return Outputs(
        dof_value=np.empty((t, n)),
        root_position=np.empty((t, 3)),
        root_orientation=np.empty((t, 4)),
        joint_rotation=np.empty((t if keypoints else 0, nj, 4)),
        fitted_position=np.empty((t if keypoints else 0, nj, 3)),
        residual=np.empty((t if keypoints else 0, nj)),
        iterations=np.zeros(t, np.int32),
        stop_reason=np.zeros(t, np.int8),
        limit_active=np.zeros((t, n), np.bool_),
        stats=np.zeros((t if keypoints else 0, 4)),
        information=np.zeros((t, ns)),
        inverse=np.zeros((t, ns)),
        moments=np.zeros((t, 3)),
    )


def pixel_scratch(tb: Tables, n_cameras: int) -> PixelScratch:
    """Projection scratch for the plan of ``tb`` seen by ``n_cameras`` cameras."""
    nj = tb.parent.shape[0]
    return PixelScratch(
        res=np.empty((n_cameras, nj, 2)),
        weff=np.empty((n_cameras, nj)),
        pj=np.zeros((n_cameras, nj, 2, 3)),
        phi=np.empty((nj + 1, 6, 6)),
        gm=np.empty((nj + 1, 6)),
    )
