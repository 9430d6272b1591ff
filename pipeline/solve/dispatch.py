"""Which engine solves a problem, and the calls every solver front end makes.

:func:`solve_frames <pipeline.solve.solver.solve_frames>`, :func:`solve_sequence
<pipeline.solve.solver.solve_sequence>` and :func:`solve_sequences
<pipeline.solve.batch.solve_sequences>` all go through here: :func:`prepare_problem` decides
the engine (``SolverConfig.engine``: 3D observations, the image plane and calibrated
cameras run on the compiled engine unless told otherwise, coupled plans too unless their
couplings break the tree structure the compiled engine factors; everything else on the
numpy engine)
and builds the problem in its precision; :func:`solve_independent` and
:func:`solve_chained` run it on that engine; :func:`finish` adds the uncertainties (and the
smoothing) of the result.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from pipeline.bodyplan.model import BodyPlan
from pipeline.errors import ConfigError
from pipeline.kinematics.step_groups import compiled_refusal
from pipeline.solve.config import SolverConfig
from pipeline.solve.mappers import CalibratedCameras, Identity3D, XYView, as_mapper
from pipeline.solve.numpy.frames import frames_in_lanes, sequence_in_lanes
from pipeline.solve.numpy.pose import Pose, clamp, cold_pose, initial_pose
from pipeline.solve.problem import Problem, prepare
from pipeline.solve.result import FitResult
from pipeline.solve.tasks import CoordinateTasks
from pipeline.solve.temporal.annotate import annotate
from pipeline.solve.temporal.uncertainty import FrameMoments

__all__ = ["finish", "prepare_problem", "run_compiled", "solve_chained", "solve_independent"]

#: A result and, from the compiled engine, its per-frame uncertainty inputs.
Solved = tuple[FitResult, FrameMoments | None]


def _compiled(config: SolverConfig, mapper) -> bool:
    """Whether a problem runs on the compiled engine (``SolverConfig.engine``)."""
    engine = config.engine
    direct = isinstance(mapper, Identity3D | CalibratedCameras | XYView)
    if engine == "compiled" and not direct:
        raise ConfigError(
            f"SolverConfig.engine: 'compiled' solves 3D observations, the image plane "
            f"(XYView) and calibrated cameras only, not {type(mapper).__name__}; "
            "use 'auto' or 'numpy'"
        )
    return engine == "compiled" or (engine == "auto" and direct)


def _coupled_engine(plan: BodyPlan, config: SolverConfig) -> SolverConfig:
    """``config``, on the numpy engine for a coupled plan the compiled engine cannot solve.

    The compiled engine solves a coupled plan whose coordinates each move the keypoints of
    disjoint subtrees (:mod:`pipeline.kinematics.step_groups`); ``engine="compiled"`` for
    any other is refused, with the reason.
    """
    if not plan.coupled:
        return config
    why = compiled_refusal(plan)
    if why is None:
        return config
    if config.engine == "compiled":
        raise ConfigError(
            f"SolverConfig.engine: 'compiled' cannot solve these couplings: {why}; use "
            "'auto' or 'numpy'"
        )
    return replace(config, engine="numpy")


def prepare_problem(
    plan: BodyPlan,
    targets: np.ndarray,
    weights,
    config: SolverConfig,
    mapper,
    keypoint_weights=None,
    tasks: CoordinateTasks | None = None,
) -> tuple[Problem, bool]:
    """The problem of ``targets`` and whether the compiled engine solves it.

    Parameters
    ----------
    plan, targets, weights, config, mapper
        As :func:`~pipeline.solve.solver.solve_frames` takes them (``mapper`` None: 3D).
    keypoint_weights : (J,) array-like, optional
        Per-keypoint weights multiplying the observation weights.
    tasks : CoordinateTasks, optional
        Coordinate-task terms (both engines).

    Returns
    -------
    Problem
        In float64 for the compiled engine (uncertainties from unrounded poses; results
        are rounded to ``config.dtype`` at the end), else in ``config.dtype``.
    bool
        The compiled engine solves it.

    Raises
    ------
    ConfigError
        ``engine="compiled"`` for observations or a (coupled) plan it does not solve.
    """
    config = _coupled_engine(plan, config)
    mapper = as_mapper(mapper)
    extra = {"keypoint_weights": keypoint_weights, "coordinate_tasks": tasks}
    if _compiled(config, mapper):  # float64 results: uncertainties from unrounded poses
        cfg64 = replace(config, dtype="float64")
        return _with_refine(prepare(plan, targets, weights, cfg64, mapper, **extra)), True
    return _with_refine(prepare(plan, targets, weights, config, mapper, **extra)), False


def _with_refine(prob: Problem) -> Problem:
    """``prob`` with :func:`triangulated_start` as its cold start's refinement (2+ views)."""
    return replace(prob, cold_refine=triangulated_start) if prob.mapper.n_views >= 2 else prob


def triangulated_start(prob: Problem, frames: np.ndarray, pose: Pose) -> Pose:
    """``pose`` fitted to the keypoints the cameras triangulate in ``frames``.

    The 3D fit (either engine as it chooses, the problem's settings without uncertainty,
    smoothing, restarts or coordinate tasks) of the mapper's
    :meth:`~pipeline.solve.mappers.Mapper.world_targets`: a pixel fit started from
    neutral joints can settle in another minimum (a limb turned the other way) that the
    cameras' own 3D points rule out. Frames that triangulate nothing keep ``pose``.

    Parameters
    ----------
    prob : Problem
        Observed through two or more calibrated cameras.
    frames : (S,) int array
        The frames of ``prob`` to start.
    pose : Pose
        Their cold start poses (``S`` rows).

    Returns
    -------
    Pose
        ``S`` rows, in ``prob``'s dtype.
    """
    world = prob.mapper.world_targets(prob.obs[frames], prob.weight[frames])
    if world is None:
        return pose
    points, w = world
    seen = (w > 0).sum(axis=1) > 0
    if not seen.any():
        return pose
    cfg = replace(
        prob.config, uncertainty=False, temporal="none", keypoint_weights=None,
        coordinate_tasks=None, dtype="float64", restarts=0,
    )  # fmt: skip
    sub, compiled = prepare_problem(prob.plan, points, w, cfg, None)
    start = {
        "dof_value": pose.q,
        "root_position": pose.root_pos,
        "root_orientation": pose.root_quat,
    }
    fit, _ = solve_independent(sub, compiled, initial_pose(sub, start))
    dt = prob.model.dtype
    keep = seen[:, None]
    return Pose(
        np.where(keep, fit.root_position, pose.root_pos).astype(dt),
        np.where(keep, fit.root_orientation, pose.root_quat).astype(dt),
        np.where(keep, fit.dof_value, pose.q).astype(dt),
    )


def run_compiled(
    prob: Problem, start: Pose | None, chained: bool, cold: np.ndarray | None = None
) -> Solved:
    """Solve on the compiled engine, from ``start`` or (None) cold from the neutral pose.

    Parameters
    ----------
    prob : Problem
        Float64, 3D or calibrated cameras.
    start : Pose or None
        One start pose per frame or one for all; None: cold (3D: the neutral pose with
        ``SolverConfig.cold_root``'s root; cameras: the numpy engine's cold start).
    chained : bool
        Warm-start every frame from the one before (except the ``cold`` ones).
    cold : (T,) bool, optional
        With ``chained``: the first frame of each of several sequences laid end to end
        (default: the first frame only).

    Returns
    -------
    FitResult, FrameMoments or None
        The moments unless uncertainty is off.
    """
    from pipeline.solve.compiled import solve_compiled  # numba kernels load on first use

    if isinstance(prob.mapper, CalibratedCameras | XYView):  # projection rows per view
        from pipeline.solve.compiled.projection import solve_projected

        return solve_projected(prob, start, chained, cold)
    cfg, model = prob.config, prob.model
    kabsch = start is None and cfg.cold_root == "kabsch" and model.free_base
    if start is None:  # one start pose for all; the kernel fits each frame's root
        q, _ = clamp(model, model.neutral[None].astype(model.dtype))
        start = Pose(np.zeros((1, 3)), np.array([[1.0, 0.0, 0.0, 0.0]]), q)
    velocity = cfg.warm_start == "velocity"
    return solve_compiled(
        prob, start.q, start.root_pos, start.root_quat, chained, velocity, kabsch, cold
    )


def solve_independent(prob: Problem, compiled: bool, start: Pose | None) -> Solved:
    """Every frame of ``prob`` solved on its own from ``start`` (None: cold)."""
    if compiled:
        return run_compiled(prob, start, chained=False)
    if start is None:
        start = cold_pose(prob, np.arange(prob.n_frames))
    return frames_in_lanes(prob, start), None


def solve_chained(prob: Problem, compiled: bool, cold: np.ndarray | None = None) -> Solved:
    """The frames of ``prob`` solved as a sequence, each warm-started from those before.

    ``cold`` (compiled engine only) marks where each of several sequences laid end to end
    starts (:func:`run_compiled`); the numpy engine solves one sequence.
    """
    if compiled:
        return run_compiled(prob, None, chained=True, cold=cold)
    if cold is not None and cold[1:].any():
        raise ValueError("solve_chained: several sequences need the compiled engine")
    return sequence_in_lanes(prob), None


def finish(
    prob: Problem,
    result: FitResult,
    fps: float | None,
    smooth: bool,
    dtype,
    moments: FrameMoments | None = None,
) -> FitResult:
    """``result`` with its uncertainties, smoothed with ``smooth``, in ``dtype``.

    See :func:`pipeline.solve.temporal.annotate.annotate` (``moments``: the compiled
    engine's, else they are computed from ``prob``).
    """
    return annotate(prob, result, fps, smooth, moments).astype(dtype)
