"""Compiled (numba) engine for direct 3D observations.

The numpy engine (:mod:`pipeline.solve.numpy`) runs many frames in lockstep so that each
numpy call is wide; its cost is bound by numpy's per-call and per-temporary overhead on
small arrays. This engine runs the same algorithm (:mod:`pipeline.solve.rules`) one frame at
a time in compiled loops: forward kinematics joint by joint (``forward``), the normal
equations from subtree moments and a leaves-first factorization of the tree-sparse normal
matrix (``normal``), pose updates and diagnostics (``pose``), the iteration loop
(``frames``; ``projection`` for calibrated cameras; what both share in ``loop``, the accept,
damping and stop rules in :mod:`pipeline.solve.rules`), with the kernels' inputs, settings,
scratch and outputs as named bundles (``bundles``). ``lane_frames`` runs the 3D loop on
several independent sequences side by side in SIMD lanes, with the one-frame kernel's
numbers: its arithmetic in ``lane_forward``, ``lane_normal`` and ``lane_step``, its scratch
in ``lane_bundles``, the sequences it is given in ``lane_cuts``. Kernels compile on first
use (about a minute and a half on 2 cores in a fresh environment) and are cached on disk
(numba's ``cache=True``), so later processes load them (about 0.5 s); :func:`warm_up` does
either up front, outside any timed region: once at start-up and on every dask worker when a
cluster starts (``pipeline.cluster.plugins.SolverPreload``).

Cache: a cached kernel is reused only while none of the files it is built from changed:
this package's ``*.py`` and the project modules they import (``pipeline/solve/rules.py``,
``pipeline/kinematics/plan_arrays.py``, ...; :func:`~pipeline.solve.kernel_cache.package_sources`).
numba alone checks only the file that defines a kernel, so after an edit to a callee's file
(``normal.py``, ``forward.py``, ...) or to a constant a kernel reads, it would load the old
build. :func:`~pipeline.solve.kernel_cache.stamp_package`, called first thing below
(numba picks a function's cache when the function is decorated), makes numba's own locators
stamp the cache of this package's functions with one hash of those files; the cache stays
where numba puts it (``__pycache__`` here, ``NUMBA_CACHE_DIR`` if set, the user's cache
directory for a read-only install), a recompiled kernel overwrites its files and builds of
other sources are pruned after a compile. Editing any of those files costs a recompile.
"""

# ruff: noqa: E402 (the cache is set up before the kernel modules are imported)

from __future__ import annotations

from pipeline.solve.kernel_cache import stamp_package

stamp_package(__name__)

import logging
import threading
import time
from collections.abc import Callable

import numpy as np

from pipeline.bodyplan.model import BodyPlan, Dof, Joint
from pipeline.solve.compiled.bundles import (
    Inputs,
    Outputs,
    outputs,
    settings,
    task_arrays,
    workspace,
)
from pipeline.solve.compiled.frames import solve_frames_kernel
from pipeline.solve.compiled.lane_bundles import lane_workspace
from pipeline.solve.compiled.lane_cuts import cut_sequences, lanes_apply, sequence_starts
from pipeline.solve.compiled.lane_forward import LANES
from pipeline.solve.compiled.lane_frames import solve_lanes_kernel
from pipeline.solve.compiled.tables import tables
from pipeline.solve.config import SolverConfig
from pipeline.solve.problem import Problem, prepare
from pipeline.solve.result import FitResult, cast_rows
from pipeline.solve.rules import CONVERGED
from pipeline.solve.temporal.uncertainty import FrameMoments

__all__ = ["evaluate_compiled", "is_warm", "solve_compiled", "warm_up"]

log = logging.getLogger(__name__)

#: What :func:`warm_up` says before it compiles or loads the kernels.
WARM_UP_MESSAGE = (
    "kinefit: compiling the solver kernels (the first run on a machine only, 1-2 minutes; "
    "later runs load them from the cache)"
)
#: Said when the kernels were loaded from numba's cache (with the seconds it took).
LOADED_MESSAGE = "kinefit: loaded the compiled solver from its cache"
#: Seconds of warm-up after which it is a compile, not a load, and is said to be one.
SLOW_WARM_UP = 3.0


def _f64(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64)


def solve_compiled(
    prob: Problem,
    q0: np.ndarray,
    root_pos0: np.ndarray,
    root_quat0: np.ndarray,
    chained: bool,
    velocity: bool = False,
    kabsch: bool = False,
    cold: np.ndarray | None = None,
) -> tuple[FitResult, FrameMoments | None]:
    """Solve a 3D problem frame by frame.

    Parameters
    ----------
    prob : Problem
        With the :class:`~pipeline.solve.mappers.Identity3D` mapper.
    q0, root_pos0, root_quat0 : (T0, N), (T0, 3), (T0, 4)
        Clamped starting poses: one per frame, or one for every frame that is not
        warm-started (``T0 == 1``).
    chained : bool
        Warm-start every frame from the one before (except the ``cold`` ones).
    velocity : bool
        Constant-velocity warm start (with ``chained``).
    kabsch : bool
        Cold-start the root of every frame that is not warm-started by a rigid fit of the
        starting pose to its targets (``SolverConfig.cold_root == "kabsch"``).
    cold : (T,) bool, optional
        With ``chained``: frames that start cold (the first of each of several sequences
        laid end to end). Default: the first frame only.

    Returns
    -------
    FitResult
        Floats in ``config.dtype`` (values beyond its range clipped to its largest).
    FrameMoments or None
        The uncertainty inputs at every fitted pose, float64
        (:mod:`pipeline.solve.compiled.precision`); None unless ``config.uncertainty``.
    """
    cfg = prob.config
    tb = tables(prob.plan)
    t = prob.n_frames
    if cold is None:
        cold = np.zeros(t, np.bool_)
        cold[:1] = True
    inp = Inputs(
        _f64(prob.obs[:, 0]),
        _f64(prob.weight[:, 0]),
        _f64(q0),
        _f64(root_pos0),
        _f64(root_quat0),
        np.ascontiguousarray(cold, dtype=np.bool_),
        *task_arrays(prob),
    )
    kernel_cfg = settings(
        cfg,
        prob.neutral_weight,
        prob.position_tolerance,
        prob.angle_floor,
        chained,
        velocity,
        kabsch,
    )
    out = _run_kernel(tb, inp, kernel_cfg, cfg)
    moments = None
    if kernel_cfg.uncertainty:
        moments = FrameMoments(
            information=out.information,
            inverse=out.inverse,
            weighted_sq=out.moments[:, 0],
            weight=out.moments[:, 1],
            rows=out.moments[:, 2],
        )
    result = _result(out).astype(cfg.np_dtype)
    return result, moments


def _run_kernel(tb, inp: Inputs, kernel_cfg, cfg: SolverConfig):
    """Solve ``inp`` into fresh :class:`~.bundles.Outputs`: in lanes where they apply.

    A chained call whose sequences are too few to fill the lanes is cut into pieces
    first (:func:`~.lane_cuts.cut_sequences`, up to ``cfg.lanes``; ``lanes=1`` keeps
    each sequence one chain), whose warm-up rows are dropped from the outputs.
    """
    pieces = None
    if kernel_cfg.chained and not tb.coupled and kernel_cfg.n_iterations >= 1:
        starts = sequence_starts(inp.cold, True)
        observed = (inp.weight > 0.0).sum(axis=1)
        pieces = cut_sequences(starts, observed, cfg.lanes, cfg.warmup_frames)
    if pieces is not None:
        rows = pieces.rows

        def per_frame(a: np.ndarray) -> np.ndarray:
            return a if a.shape[0] == 1 else np.ascontiguousarray(a[rows])

        inp = inp._replace(
            obs=np.ascontiguousarray(inp.obs[rows]),
            weight=np.ascontiguousarray(inp.weight[rows]),
            init_q=per_frame(inp.init_q),
            init_root_pos=per_frame(inp.init_root_pos),
            init_root_quat=per_frame(inp.init_root_quat),
            cold=pieces.cold,
            task_target=per_frame(inp.task_target),
        )
    out = outputs(tb, inp.weight.shape[0])
    starts = sequence_starts(inp.cold, kernel_cfg.chained)
    if lanes_apply(tb, kernel_cfg, starts):
        solve_lanes_kernel(tb, inp, kernel_cfg, workspace(tb), lane_workspace(tb), out, starts)
    elif inp.weight.shape[0]:
        solve_frames_kernel(tb, inp, kernel_cfg, workspace(tb), out)
    if pieces is None:
        return out
    return _keep_rows(out, pieces.keep, cfg.np_dtype)


def _keep_rows(out: Outputs, keep: np.ndarray, dtype: np.dtype) -> Outputs:
    """The rows ``keep`` of ``out``, copied once: the result's floats in ``dtype`` already.

    The uncertainty inputs stay float64 (:class:`FrameMoments`).
    """
    wide = {"information", "inverse", "moments"}
    return Outputs(
        *(
            cast_rows(f, np.float64 if name in wide else dtype, keep)
            if f.dtype.kind == "f"
            else np.compress(keep, f, axis=0)
            for name, f in zip(Outputs._fields, out, strict=True)
        )
    )


def evaluate_compiled(
    prob: Problem, q: np.ndarray, root_pos: np.ndarray, root_quat: np.ndarray
) -> FitResult:
    """Diagnostics of given (clamped) poses, one per frame, without solving.

    The kernel with no iterations: each frame's keypoints, local rotations, residuals,
    RMS and objective at its pose (what the smoother's poses need). ``iterations``,
    ``stop_reason`` and ``limit_active`` are placeholders for the caller to replace.

    Parameters
    ----------
    prob : Problem
        With the :class:`~pipeline.solve.mappers.Identity3D` mapper.
    q, root_pos, root_quat : (T, N), (T, 3), (T, 4)

    Returns
    -------
    FitResult
        Float64.
    """
    t = prob.n_frames
    tb = tables(prob.plan)
    inp = Inputs(
        _f64(prob.obs[:, 0]),
        _f64(prob.weight[:, 0]),
        _f64(q),
        _f64(root_pos),
        _f64(root_quat),
        np.ones(t, np.bool_),
        *task_arrays(prob),
    )
    kernel_cfg = settings(
        prob.config, prob.neutral_weight, prob.position_tolerance, prob.angle_floor,
        False, False, False,
    )._replace(n_iterations=0, uncertainty=False)  # fmt: skip
    out = outputs(tb, t)
    if t:
        solve_frames_kernel(tb, inp, kernel_cfg, workspace(tb), out)
    return _result(out)


def _result(out) -> FitResult:
    """The kernel's outputs as a (float64) FitResult."""
    stats = out.stats
    return FitResult(
        dof_value=out.dof_value,
        root_position=out.root_position,
        root_orientation=out.root_orientation,
        joint_rotation=out.joint_rotation,
        fitted_position=out.fitted_position,
        residual=out.residual,
        rms_error=stats[:, 0],
        max_error=stats[:, 1],
        iterations=out.iterations,
        converged=out.stop_reason == CONVERGED,
        stop_reason=out.stop_reason,
        objective=stats[:, 3],
        limit_active=out.limit_active,
        observed=stats[:, 2].astype(np.int32),
    )


def is_warm() -> bool:
    """Whether this process has the solver kernels compiled or loaded already."""
    from pipeline.solve.temporal.marginal import _rts

    kernels = (solve_frames_kernel, solve_lanes_kernel, _rts)
    return all(bool(k.signatures) for k in kernels)


def warm_up(say: Callable[[str], None] | None = None, *, smoother: bool = True) -> float:
    """Compile (the first time ever) or load (from numba's cache) the solver kernels.

    One call covers every body plan and setting: the kernels are specialized on array
    types only, the same for all. It solves two frames of a tiny plan and smooths three
    (``temporal="smooth"``'s kernel, :mod:`pipeline.solve.temporal.marginal`).

    Parameters
    ----------
    say : callable, optional
        Called with :data:`WARM_UP_MESSAGE` before the work when the kernels are not
        loaded yet (default: logged at INFO on ``pipeline.solve.compiled``).
    smoother : bool
        Also the smoother's kernel (False leaves it to its first use, or to another
        process warming the same cache at the same time).

    Returns
    -------
    float
        Seconds spent (0 when already warm).
    """
    if is_warm():
        return 0.0
    speak = say or log.info
    # a load from the cache takes well under a second: the compile message is said only
    # when the work outlasts that (a compile), and a load is said as a load
    timer = threading.Timer(SLOW_WARM_UP, speak, [WARM_UP_MESSAGE])
    timer.daemon = True
    timer.start()
    try:
        seconds = _warm_up(smoother)
    finally:
        timer.cancel()
    if seconds <= SLOW_WARM_UP:
        speak(f"{LOADED_MESSAGE} ({seconds:.1f} s)")
    return seconds


def _warm_up(smoother: bool) -> float:
    t0 = time.perf_counter()
    hinge = Dof("hinge", (0.0, 0.0, 1.0))
    plan = BodyPlan(
        (
            Joint("root", None, dofs=(hinge,)),
            Joint("a", "root", (1.0, 0.0, 0.0), dofs=(Dof("slide", (1.0, 0.0, 0.0)),)),
            Joint("b", "a", (0.0, 1.0, 0.0), dofs=(hinge,)),
            Joint("c", "b", (0.0, 0.0, 1.0)),
        )
    )
    targets = np.zeros((2, plan.n_joints, 3))
    targets[:, :, 0] = np.arange(plan.n_joints)
    prob = prepare(plan, targets, None, SolverConfig(), None, np.float64)
    start = np.zeros((1, plan.n_dofs)), np.zeros((1, 3)), np.array([[1.0, 0.0, 0.0, 0.0]])
    solve_compiled(prob, *start, chained=True, kabsch=True)
    many = prepare(plan, np.repeat(targets[:1], LANES, 0), None, SolverConfig(), None, np.float64)
    solve_compiled(many, *start, chained=False, kabsch=True)  # the lane kernel
    if not smoother:
        return time.perf_counter() - t0
    from pipeline.solve.temporal.marginal import smooth_coordinates  # its kernel too

    n = plan.n_dofs + 6
    smooth_coordinates(np.zeros((3, n)), None, np.ones((3, n)), np.ones(n), 0.01,
                       np.zeros(n, bool), np.ones(n))  # fmt: skip
    return time.perf_counter() - t0
