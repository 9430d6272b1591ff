"""The compiled (numba) solver engine against the numpy engine.

Both engines implement one algorithm (QuickIK's damped Gauss-Newton with the neutral
prior, relative damping, clamp after every step, stop on the applied update; the LM
acceptance rule; huber/cauchy reweighting). Started from the same pose they take the same
steps, and ``solve_sequence`` with ``lanes=1`` chains frames in the numpy engine exactly
as the compiled engine always does, so in float64 every output agrees to round-off on
well-posed problems.

Tolerances
----------
``ATOL = 1e-9`` (rad, length units; the random plans are unit-sized): in exploratory
runs over 720 seeded problems (every plan family, GN/LM, l2/huber/cauchy, missing
keypoints, fractional weights) the largest difference on converged frames was 3e-12
(3e-13 on the problems below), so this leaves ~300x for round-off while staying 1e6x
below the 1e-3 stopping tolerance: any real difference
in a step (a Jacobian column, a prior term, a clamp, the damping) moves the answer by far
more. Only frames that converge are compared: a Gauss-Newton iteration that never
settles (unreachable targets on an ill-conditioned plan) amplifies round-off without
bound, which is no disagreement of the engines. Every problem below asserts that all its
frames converged, so the comparison is never vacuous.
"""

from __future__ import annotations

import json
from dataclasses import fields

import numpy as np
import pytest

from pipeline.bodyplan import load_body_plan
from pipeline.cameras import Camera
from pipeline.errors import ConfigError
from pipeline.kinematics import forward_kinematics
from pipeline.kinematics.plan_arrays import compile_plan
from pipeline.solve import (
    FitResult,
    Identity3D,
    SolverConfig,
    XYView,
    solve_frames,
    solve_sequence,
)
from pipeline.solve.mappers import Mapper
from tests.fixtures.plan_factory import chain_plan, random_plan, random_pose

# make check skips it: engine-equality solves of real plans
pytestmark = pytest.mark.slow

ATOL = 1e-9  # float64 agreement of converged answers (module docstring)
STEP_ATOL = 1e-10  # one Gauss-Newton step from the same start (test_one_step_agrees)

FLOATS = (
    "dof_value",
    "root_position",
    "fitted_position",
    "residual",
    "rms_error",
    "max_error",
    "objective",
)
QUATS = ("root_orientation", "joint_rotation")
EXACT = ("iterations", "converged", "stop_reason", "limit_active", "observed")


def sign_aligned(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a`` with each quaternion's sign flipped to match ``b`` (q and -q: one rotation)."""
    s = np.sign(np.sum(a * b, axis=-1, keepdims=True))
    return a * np.where(s == 0, 1.0, s)


def assert_same(a: FitResult, b: FitResult, atol: float = ATOL) -> None:
    """Every field of two results agrees: floats to ``atol``, flags and counts exactly."""
    for name in FLOATS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape, name
        # equal_nan: a residual is NaN in both (missing) or in neither
        np.testing.assert_allclose(x, y, rtol=0, atol=atol, equal_nan=True, err_msg=name)
    for name in QUATS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape, name
        np.testing.assert_allclose(sign_aligned(x, y), y, rtol=0, atol=atol, err_msg=name)
    for name in EXACT:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


def engines(
    solve, plan, targets, weights=None, base=SolverConfig.quickik, **kwargs
) -> tuple[FitResult, FitResult]:
    """``solve`` on the compiled and on the numpy engine (``lanes=1``: strictly sequential).

    Settings are ``base(**kwargs)``: QuickIK's by default (the problems below were chosen
    to converge under them), ``SolverConfig`` for the defaults.
    """
    initial = kwargs.pop("initial", None)
    extra = {} if initial is None else {"initial": initial}
    return tuple(
        solve(plan, targets, weights, config=base(engine=e, lanes=1, **kwargs), **extra)
        for e in ("compiled", "numpy")
    )


# --- problems -----------------------------------------------------------------------------

#: Plan families, each with a seed whose every problem below converges on every frame.
PLANS = {
    "hinges_free_base": ({"kinds": False, "limits": False, "fixed_base": False}, 1),
    "hinges_fixed_base": ({"kinds": False, "limits": False, "fixed_base": True}, 0),
    # targets from poses far outside the limits: clamps are active at the answer
    "limits_wild": ({"kinds": False, "limits": True, "fixed_base": False, "wild": True}, 1),
    # ball, universal, hinge, prismatic and fixed joints, their limits active too
    "kinds_free_base": ({"kinds": True, "fixed_base": False, "wild": True}, 13),
    "kinds_fixed_base": ({"kinds": True, "fixed_base": True}, 2),
}

SOLVERS = {
    "gn_l2": {},
    "lm_l2": {"mode": "lm"},
    "gn_huber": {"loss": "huber", "loss_scale": 0.01},
    "lm_cauchy": {"mode": "lm", "loss": "cauchy", "loss_scale": 0.01},
    "lm_distance": {"mode": "lm", "tolerance_on": "distance"},
}


def problem(seed: int, kinds=False, limits=False, fixed_base=False, wild=False, n_frames=6):
    """A smooth motion of a random plan: noisy targets, missing keypoints, fractional
    weights. The noise (0.01 per coordinate) exceeds the robust losses' ``loss_scale``
    of 0.01 in distance, so huber and cauchy reweight most keypoints.

    Returns
    -------
    plan, targets (T, J, 3), weights (T, J), truth (dict of the true poses)
    """
    rng = np.random.default_rng(seed)
    plan = random_plan(rng, n_joints=7, kinds=kinds, limits=limits, fixed_base=fixed_base)
    q0, root_pos, root_quat = random_pose(plan, rng, n=1, scale=0.4)
    t = np.linspace(0.0, 1.0, n_frames)[:, None]
    q = q0 + 0.3 * np.sin(2 * np.pi * t + np.arange(plan.n_dofs))
    if wild:  # every DOF shifted by 1 rad (or length unit): many beyond their limits
        q = q + rng.choice([-1.0, 1.0], size=plan.n_dofs)
    root_pos = root_pos + 0.2 * t * np.array([1.0, -0.5, 0.3])
    root_quat = np.repeat(root_quat, n_frames, axis=0)
    if plan.fixed_base:  # pinned at the origin
        root_pos = np.zeros_like(root_pos)
        root_quat = np.broadcast_to([1.0, 0.0, 0.0, 0.0], root_quat.shape).copy()
    targets = forward_kinematics(plan, q, root_pos, root_quat)
    targets += rng.normal(scale=0.01, size=targets.shape)
    weights = rng.uniform(0.3, 1.0, size=targets.shape[:2])
    missing = rng.random(targets.shape[:2]) < 0.1
    targets[missing] = np.nan
    truth = {"dof_value": q, "root_position": root_pos, "root_orientation": root_quat}
    return plan, targets, weights, truth


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("family", PLANS)
@pytest.mark.parametrize("start", ["cold", "initial", "previous", "velocity"])
def test_engines_agree_in_float64(family, solver, start):
    options, seed = PLANS[family]
    plan, targets, weights, truth = problem(seed, **options)
    cfg = {"n_iterations": 300, **SOLVERS[solver]}
    if start == "cold":
        a, b = engines(solve_frames, plan, targets, weights, **cfg)
    elif start == "initial":
        # a perturbed truth, one per frame (clamped into the limits by both engines)
        rng = np.random.default_rng(seed + 100)
        init = dict(
            truth, dof_value=truth["dof_value"] + rng.normal(0, 0.2, truth["dof_value"].shape)
        )
        a, b = engines(solve_frames, plan, targets, weights, initial=init, **cfg)
    else:
        a, b = engines(solve_sequence, plan, targets, weights, warm_start=start, **cfg)
    assert a.converged.all(), "choose a problem whose frames converge (module docstring)"
    assert_same(a, b)
    assert np.isnan(a.residual).any()  # some keypoints were missing
    if options.get("wild"):
        assert a.limit_active.any()
    if options["kinds"]:
        assert compile_plan(plan).ball_swing.size  # a ball joint is in the plan


@pytest.mark.parametrize("family", ["hinges_free_base", "hinges_fixed_base", "kinds_fixed_base"])
@pytest.mark.parametrize("solve", [solve_frames, solve_sequence])
def test_engines_agree_with_the_defaults(family, solve):
    """The default (size-scaled LM, restarts in solve_frames) agrees across engines too."""
    options, seed = PLANS[family]
    plan, targets, weights, _ = problem(seed, **options)
    a, b = engines(solve, plan, targets, weights, base=SolverConfig, restarts=2)
    assert (a.stop_reason != 1).all()  # no frame at the cap
    assert_same(a, b)


@pytest.mark.parametrize("warm_start", ["previous", "velocity"])
def test_sequences_wrap_unbounded_hinges_alike(warm_start):
    """A hinge spinning two whole turns: both engines wrap its start into neutral +- pi
    at every frame the same way and fit every frame exactly."""
    plan = chain_plan(fixed_base=True)
    spin = np.linspace(0.0, 4 * np.pi, 40)
    targets = forward_kinematics(plan, np.column_stack([spin, 0.3 * np.sin(spin)]))
    a, b = engines(solve_sequence, plan, targets, warm_start=warm_start, neutral_weight=0.0,
                   n_iterations=30, position_tolerance=1e-10, angle_tolerance=1e-10)  # fmt: skip
    assert a.converged.all()
    assert_same(a, b)
    np.testing.assert_allclose(a.fitted_position, targets, atol=1e-9)
    assert np.abs(a.dof_value[:, 0]).max() < np.pi + 0.4  # wrapped, not wound up
    assert np.ptp(np.unwrap(a.dof_value[:, 0])) > 3 * np.pi  # ... while it spun


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("solver", ["gn_l2", "lm_l2", "gn_huber"])
def test_one_step_agrees(seed, solver):
    """One step from the same start pins the normal equations (subtree moments) and the
    tree L^T D L elimination against the numpy engine's block Schur elimination.

    Far, noisy targets and a random start: the step is large and nowhere near an optimum.
    One step is a single linear solve, so the two answers differ by round-off times the
    condition of the normal matrix (~1e5 at most: the 1e-3 prior bounds the smallest
    eigenvalue). Measured: 2.4e-12 at most, so 1e-10 leaves 40x.
    """
    rng = np.random.default_rng(1000 + seed)
    plan = random_plan(rng, n_joints=8, kinds=bool(seed % 2), fixed_base=seed % 4 == 0)
    q, root_pos, root_quat = random_pose(plan, rng, n=5, scale=1.0)
    targets = forward_kinematics(plan, q, root_pos, root_quat)
    targets += rng.normal(scale=0.5, size=targets.shape)
    targets[rng.random(targets.shape[:2]) < 0.15] = np.nan
    weights = rng.uniform(0.2, 1.0, size=targets.shape[:2])
    start_q, start_pos, start_quat = random_pose(plan, rng, n=5, scale=1.0)
    cfg = {"n_iterations": 1, "position_tolerance": 0.0, "angle_tolerance": 0.0}
    cfg |= SOLVERS[solver]
    start = {"dof_value": start_q}
    if not plan.fixed_base:  # see test_fixed_base_ignores_an_initial_root_pose
        start |= {"root_position": start_pos, "root_orientation": start_quat}
    for initial in (None, start):
        a, b = engines(solve_frames, plan, targets, weights, initial=initial, **cfg)
        np.testing.assert_array_equal(a.iterations, 1)
        assert_same(a, b, atol=STEP_ATOL)


# --- float32 ------------------------------------------------------------------------------


def test_float32_is_the_float64_solve_rounded():
    """The compiled engine computes in float64 whatever ``dtype`` (SolverConfig docs).

    With inputs that float32 represents exactly (targets, weights, a neutral start at an
    identity root orientation), the float32 solve is exactly the float64 solve rounded.
    """
    plan, targets, weights, _ = problem(1, fixed_base=False)
    targets = targets.astype(np.float32).astype(np.float64)
    weights = weights.astype(np.float32).astype(np.float64)
    init = {
        "dof_value": plan.neutral,
        "root_position": np.float32([0.25, -0.5, 0.125]),
        "root_orientation": np.array([1.0, 0.0, 0.0, 0.0]),
    }
    r = {
        dt: solve_frames(
            plan, targets, weights, config=SolverConfig(engine="compiled", dtype=dt), initial=init
        )
        for dt in ("float32", "float64")
    }
    for f in fields(FitResult):
        x, y = getattr(r["float32"], f.name), getattr(r["float64"], f.name)
        if y.dtype == np.float64:
            assert x.dtype == np.float32, f.name
            np.testing.assert_array_equal(x, y.astype(np.float32), err_msg=f.name)
        else:
            assert x.dtype == y.dtype, f.name
            np.testing.assert_array_equal(x, y, err_msg=f.name)


@pytest.mark.parametrize("solve", [solve_frames, solve_sequence])
def test_float32_agrees_with_float64(solve):
    """Cold start, arbitrary inputs: float32 returns float32 arrays, close to float64.

    Rounding the targets to float32 moves them by ~1e-7 (relative 6e-8 of unit-sized
    coordinates) and the float32 cold start (a float32 Kabsch fit) by as much; the
    converged answer moves by that times the problem's sensitivity: measured 2.3e-7 rad
    and 1.9e-7 length units here (3e-6 at most over other converged seeds), so 1e-5
    leaves margin. (From a cold start near a basin boundary that perturbation can pick a
    different local minimum, as on some other seeds; this problem's frames do not.)
    """
    options, seed = PLANS["kinds_free_base"]
    plan, targets, weights, _ = problem(seed, **options)
    r64, r32 = (
        solve(
            plan,
            targets,
            weights,
            config=SolverConfig.quickik(engine="compiled", dtype=dt, n_iterations=300),
        )
        for dt in ("float64", "float32")
    )
    for name in (*FLOATS, *QUATS):
        assert getattr(r32, name).dtype == np.float32, name
    assert r64.converged.all() and r32.converged.all()
    np.testing.assert_array_equal(r32.observed, r64.observed)
    for name in FLOATS:
        np.testing.assert_allclose(
            getattr(r32, name), getattr(r64, name), rtol=0, atol=1e-5, err_msg=name
        )
    for name in QUATS:
        x, y = getattr(r32, name).astype(np.float64), getattr(r64, name)
        np.testing.assert_allclose(sign_aligned(x, y), y, rtol=0, atol=1e-5, err_msg=name)


# --- the QuickIK fly ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def fly_native(quickik_dir):
    """The fly plan and its 300 native-rate frames ``(300, 31, 3)``, thorax missing
    (as in test_solver_fly.py)."""
    plan = load_body_plan(quickik_dir / "neuromechfly_ypr_legs.json")
    frames = json.loads((quickik_dir / "fixtures.json").read_text())["native_rate_frames"]
    targets = np.full((len(frames), plan.n_joints, 3), np.nan)
    targets[:, 1:] = [f["target_ego"] for f in frames]
    return plan, targets


def test_fly_sequence_compiled_reaches_quickik_and_matches_numpy(fly_native):
    """Defaults: mean per-frame RMS <= 0.0762 mm (QuickIK's optimum is 0.07609 mm); the
    numpy engine with one lane takes the same steps (measured: 1.4e-14 rad apart)."""
    plan, targets = fly_native
    assert targets.shape[0] == 300
    a = solve_sequence(plan, targets, config=SolverConfig(engine="compiled"))
    assert a.rms_error.mean() <= 0.0762
    b = solve_sequence(plan, targets, config=SolverConfig(engine="numpy", lanes=1))
    assert_same(a, b)
    auto = solve_sequence(plan, targets)  # auto: 3D observations take the compiled engine
    np.testing.assert_array_equal(auto.dof_value, a.dof_value)


def test_fly_sequence_compiled_float32_agrees_with_float64(fly_native):
    """float32 rounds the targets (~1e-8 mm at the fly's ~2 mm scale); measured: 6e-7 rad,
    2e-7 mm apart, the same iteration counts. 1e-5 rad / 1e-5 mm leaves margin."""
    plan, targets = fly_native
    r64, r32 = (
        solve_sequence(plan, targets, config=SolverConfig(engine="compiled", dtype=dt))
        for dt in ("float64", "float32")
    )
    assert r32.dof_value.dtype == r32.fitted_position.dtype == np.float32
    np.testing.assert_allclose(r32.dof_value, r64.dof_value, rtol=0, atol=1e-5)
    np.testing.assert_allclose(r32.fitted_position, r64.fitted_position, rtol=0, atol=1e-5)
    assert abs(r32.rms_error.mean() - r64.rms_error.mean()) < 1e-6


# --- a fixed base given an initial root pose ----------------------------------------------


def fixed_chain_from_a_far_root(engine: str) -> tuple[FitResult, np.ndarray, np.ndarray]:
    """The fixed-base chain bent to a known pose, started from a root pose 5 units up and
    turned half a turn about z (a fixed base must ignore it)."""
    plan = chain_plan(fixed_base=True)
    q_true = np.array([[0.4, -0.7], [-0.3, 1.1]])
    targets = forward_kinematics(plan, q_true)
    init = {
        "dof_value": plan.neutral,
        "root_position": np.array([0.0, 0.0, 5.0]),
        "root_orientation": np.array([0.0, 0.0, 0.0, 1.0]),
    }
    cfg = SolverConfig(engine=engine, neutral_weight=0.0, n_iterations=50,
                       position_tolerance=1e-12, angle_tolerance=1e-12)  # fmt: skip
    return solve_frames(plan, targets, config=cfg, initial=init), q_true, targets


@pytest.mark.parametrize(
    "engine",
    ["compiled", "numpy"],
)
def test_fixed_base_ignores_an_initial_root_pose(engine):
    r, q_true, targets = fixed_chain_from_a_far_root(engine)
    np.testing.assert_allclose(r.fitted_position, targets, atol=1e-9)
    np.testing.assert_allclose(r.dof_value, q_true, atol=1e-9)


@pytest.mark.parametrize("engine", ["compiled", "numpy"])
def test_fixed_base_result_reports_the_origin(engine):
    r, _, _ = fixed_chain_from_a_far_root(engine)
    np.testing.assert_array_equal(r.root_position, 0.0)
    np.testing.assert_array_equal(r.root_orientation, [[1.0, 0.0, 0.0, 0.0]] * 2)


# --- engine selection ---------------------------------------------------------------------


def test_unknown_engine_lists_the_choices():
    with pytest.raises(
        ValueError, match=r"SolverConfig\.engine: 'bogus' is not one of auto, compiled, numpy"
    ):
        SolverConfig(engine="bogus")


@pytest.mark.parametrize("solver", ["lm_l2", "lm_cauchy"])
@pytest.mark.parametrize("family", PLANS)
@pytest.mark.parametrize("solve", [solve_frames, solve_sequence])
def test_engines_agree_on_the_image_plane(family, solver, solve):
    """The problems above seen on the XY plane (``XYView``: the compiled engine's
    projection kernel with its image-plane view) agree across the engines as in 3D. With
    only x and y, Gauss-Newton leaves some frames of the free-base plans unconverged
    (measured), so the Levenberg-Marquardt solvers are the ones compared."""
    options, seed = PLANS[family]
    plan, targets, weights, _ = problem(seed, **options)
    cfg = {"n_iterations": 300, **SOLVERS[solver]}
    a, b = (
        solve(plan, targets[..., :2], weights, config=SolverConfig.quickik(engine=e, lanes=1,
              **cfg), mapper=XYView())
        for e in ("compiled", "numpy")
    )  # fmt: skip
    assert a.converged.all(), "choose a problem whose frames converge (module docstring)"
    assert_same(a, b)
    assert np.isnan(a.residual).any()


@pytest.mark.parametrize("solve", [solve_frames, solve_sequence])
def test_compiled_engine_takes_a_pinhole_camera(solve):
    """The one Camera class: distortion 'none' is the pinhole, solved by the compiled engine."""
    plan = chain_plan()
    camera = Camera(name="cam", size=(640, 480), fx=500, fy=500, cx=320, cy=240,
                    translation=(0.0, 0.0, 10.0))  # fmt: skip
    targets = np.full((3, plan.n_joints, 2), np.nan)
    fit = solve(plan, targets, config=SolverConfig(engine="compiled"), mapper=camera)
    assert fit.dof_value.shape == (3, plan.n_dofs)
    assert np.isfinite(fit.dof_value).all()


def test_auto_engine_solves_xy_views_with_the_compiled_engine():
    """A planar chain bending about z seen on the XY plane: the pose comes back exactly,
    and ``auto`` gives the compiled engine's answer bit for bit."""
    plan = chain_plan(fixed_base=True)
    q_true = np.array([[0.4, -0.7], [-1.1, 0.5], [0.2, 1.3]])
    xy = forward_kinematics(plan, q_true)[..., :2]
    cfg = {"neutral_weight": 0.0, "n_iterations": 50, "position_tolerance": 1e-12,
           "angle_tolerance": 1e-12}  # fmt: skip
    auto = solve_frames(plan, xy, config=SolverConfig(**cfg), mapper=XYView())
    np.testing.assert_allclose(auto.dof_value, q_true, atol=1e-8)
    assert auto.rms_error.max() < 1e-8
    compiled = SolverConfig(engine="compiled", **cfg)
    compiled = solve_frames(plan, xy, config=compiled, mapper=XYView())
    for f in fields(FitResult):
        np.testing.assert_array_equal(getattr(auto, f.name), getattr(compiled, f.name))


@pytest.mark.parametrize("mapper", [None, Identity3D()])
def test_auto_engine_solves_3d_with_the_compiled_engine(mapper):
    plan, targets, weights, _ = problem(2, fixed_base=True)
    auto = solve_frames(plan, targets, weights, mapper=mapper)
    compiled = solve_frames(plan, targets, weights, config=SolverConfig(engine="compiled"))
    for f in fields(FitResult):
        np.testing.assert_array_equal(getattr(auto, f.name), getattr(compiled, f.name))
    # the engines' round-off differs (most of the 54 values, measured), which tells them apart
    numpy_ = solve_frames(plan, targets, weights, config=SolverConfig(engine="numpy"))
    assert not np.array_equal(numpy_.fitted_position, auto.fitted_position)


# --- degenerate and empty input -----------------------------------------------------------


@pytest.mark.parametrize(
    "case", ["all_missing", "huge", "inf_target", "zero_weights", "one_keypoint"]
)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("engine", ["compiled", "numpy"])
def test_degenerate_inputs_give_finite_answers(engine, dtype, case):
    rng = np.random.default_rng(77)
    plan = random_plan(rng, n_joints=6, kinds=True, fixed_base=False)
    q, root_pos, root_quat = random_pose(plan, rng, n=4)
    targets = forward_kinematics(plan, q, root_pos, root_quat)
    weights = np.ones(targets.shape[:2])
    if case == "all_missing":
        targets[:] = np.nan
    elif case == "huge":
        targets *= 1e30
    elif case == "inf_target":
        targets[:, 2] = np.inf
    elif case == "zero_weights":
        weights[:] = 0.0
    elif case == "one_keypoint":
        targets[:, 1:] = np.nan
    observed = (weights > 0) & np.isfinite(targets).all(axis=-1)
    cfg = SolverConfig(engine=engine, dtype=dtype)
    for solve in (solve_frames, solve_sequence):
        r = solve(plan, targets, weights, config=cfg)
        for name in (*FLOATS, *QUATS):
            value = getattr(r, name)
            assert value.dtype == np.dtype(dtype), name
            if name != "residual":
                assert np.all(np.isfinite(value)), name
        assert np.all(np.isfinite(r.residual[observed]))
        assert np.all(np.isnan(r.residual[~observed]))
        np.testing.assert_array_equal(r.observed, observed.sum(axis=1))
        lo, hi = plan.lower.astype(dtype), plan.upper.astype(dtype)
        assert np.all(r.dof_value >= lo) and np.all(r.dof_value <= hi)
        if not observed.any():  # nothing to fit: the neutral pose at the origin
            np.testing.assert_array_equal(r.dof_value, np.broadcast_to(plan.neutral, q.shape))
            np.testing.assert_array_equal(r.root_position, 0.0)
            np.testing.assert_array_equal(r.root_orientation, [[1.0, 0.0, 0.0, 0.0]] * 4)
            np.testing.assert_array_equal(r.rms_error, 0.0)
            np.testing.assert_array_equal(r.max_error, 0.0)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("engine", ["compiled", "numpy"])
@pytest.mark.parametrize("solve", [solve_frames, solve_sequence])
def test_empty_input_gives_empty_arrays(solve, engine, dtype):
    plan = random_plan(np.random.default_rng(9), n_joints=5, kinds=True, fixed_base=False)
    n, nj = plan.n_dofs, plan.n_joints
    r = solve(plan, np.zeros((0, nj, 3)), config=SolverConfig(engine=engine, dtype=dtype))
    shapes = {
        "dof_value": (0, n),
        "root_position": (0, 3),
        "root_orientation": (0, 4),
        "joint_rotation": (0, nj, 4),
        "fitted_position": (0, nj, 3),
        "residual": (0, nj),
        "rms_error": (0,),
        "max_error": (0,),
        "iterations": (0,),
        "converged": (0,),
        "stop_reason": (0,),
        "objective": (0,),
        "limit_active": (0, n),
        "observed": (0,),
    }
    for name, shape in shapes.items():
        assert getattr(r, name).shape == shape, name
    for name in (*FLOATS, *QUATS):
        assert getattr(r, name).dtype == np.dtype(dtype), name
    assert r.converged.dtype == bool and r.limit_active.dtype == bool
    assert len(r) == 0


class _Doubled(Mapper):
    """A user's own mapper (world points doubled): only the numpy engine solves it."""

    def project(self, positions):
        return 2.0 * positions[:, None]

    def jacobian(self, positions):
        return None


@pytest.mark.parametrize("solve", [solve_frames, solve_sequence])
def test_compiled_engine_refuses_a_mapper_of_its_own(solve):
    plan = chain_plan()
    targets = np.zeros((3, plan.n_joints, 3))
    with pytest.raises(ConfigError, match=r"SolverConfig\.engine: 'compiled' solves 3D"):
        solve(plan, targets, config=SolverConfig(engine="compiled"), mapper=_Doubled())


@pytest.mark.parametrize("solve", [solve_frames, solve_sequence])
def test_compiled_engine_takes_empty_image_plane_input(solve):
    plan = chain_plan(fixed_base=True)
    cfg = SolverConfig(engine="compiled")
    r = solve(plan, np.zeros((0, plan.n_joints, 2)), config=cfg, mapper=XYView())
    assert len(r) == 0 and r.dof_value.shape == (0, plan.n_dofs)
