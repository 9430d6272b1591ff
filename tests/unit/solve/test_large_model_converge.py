"""The default solver converges on a full-body OpenSim model in a fast trial.

``Rajagopal2016.osim`` imported exactly (37 DOFs: the pelvis' 6, legs with spline-driven
knees and coupled patellae, lumbar, arms; 8 of them locked, as OpenSim locks subtalar,
mtp and wrist) runs a running-like motion at 50 Hz: large joint excursions (hip 70
degrees, knee 85) and up to 10 degrees between frames. Its 66 markers come from
OpenSim's own forward kinematics (``getLocationInGround``), so the truth is outside
kinefit. With the default :class:`~pipeline.solve.SolverConfig` every frame converges in
a few iterations, with exact markers and with 5 mm of marker noise; the optimum of a
noisy frame is checked against scipy's ``least_squares`` on the same objective.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.optimize import least_squares

from pipeline.bodyplan.engine_config import from_engine_configuration, to_engine_configuration
from pipeline.bodyplan.importers.osim import import_osim
from pipeline.kinematics import forward_kinematics
from pipeline.solve import SolverConfig, solve_sequence
from pipeline.solve.rules import CONVERGED, MAX_ITERATIONS
from tests.unit.bodyplan.importers.models import OSIM, need

# make check skips it: runs OpenSim on a full-body model
pytestmark = pytest.mark.slow

osim = need("opensim", "osim")
osim.Logger.setLevelString("error")

MODEL = OSIM / "Rajagopal2016.osim"
N_FRAMES, FPS, STRIDE_HZ = 40, 50.0, 1.4
NOISE = 0.005  # m, per marker coordinate


def running(t: np.ndarray) -> dict[str, np.ndarray]:
    """Coordinate trajectories (rad, m) of a running-like stride, within OpenSim's ranges."""
    w = 2 * np.pi * STRIDE_HZ

    def s(amp, phase=0.0, k=1):
        return amp * np.sin(k * w * t + phase)

    q = {
        "pelvis_tilt": -0.1 + s(0.06, 0, 2),
        "pelvis_list": s(0.06, 0.3),
        "pelvis_rotation": s(0.15, 0.2),
        "pelvis_tx": s(0.05, 0, 2),
        "pelvis_ty": 0.94 + s(0.04, 0.5, 2),
        "pelvis_tz": s(0.02, 0.1),
        "lumbar_extension": -0.1 + s(0.06, 0.4, 2),
        "lumbar_bending": s(0.06, 1.0),
        "lumbar_rotation": s(0.15, np.pi),
    }
    for side, ph in (("r", 0.0), ("l", np.pi)):
        q |= {
            f"hip_flexion_{side}": 0.45 + s(0.6, ph),
            f"hip_adduction_{side}": -0.05 + s(0.1, ph + 1),
            f"hip_rotation_{side}": s(0.12, ph + 0.5),
            f"knee_angle_{side}": 0.9 + s(0.75, ph - 1.2),
            f"ankle_angle_{side}": 0.05 + s(0.3, ph - 0.6),
            f"arm_flex_{side}": s(0.6, ph + np.pi),
            f"arm_add_{side}": -0.2 + s(0.08, ph),
            f"arm_rot_{side}": s(0.15, ph + 0.7),
            f"elbow_flex_{side}": 1.4 + s(0.3, ph + 0.3),
            f"pro_sup_{side}": 0.8 + s(0.3, ph + 1.1),
        }
    return q


@pytest.fixture(scope="module")
def trial(tmp_path_factory):
    """The plan, OpenSim's marker positions ``(T, J, 3)`` (NaN off the markers) and every
    coordinate's true trajectory, made once and cached on disk for the module."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = import_osim(MODEL)
    model = osim.Model(str(MODEL))
    state = model.initSystem()
    coords = model.getCoordinateSet()
    couplers = {}
    for c in model.getConstraintSet():
        cc = osim.CoordinateCouplerConstraint.safeDownCast(c)
        if cc is not None and c.get_isEnforced():
            couplers[cc.getDependentCoordinateName()] = (
                cc.getIndependentCoordinateNames().get(0),
                cc.getFunction(),
            )
    t = np.arange(N_FRAMES) / FPS
    truth = {c.getName(): np.full(N_FRAMES, c.getDefaultValue()) for c in coords}
    for name, v in running(t).items():
        c = coords.get(name)
        assert c.getRangeMin() <= v.min() and v.max() <= c.getRangeMax(), name
        truth[name] = v
    markers = list(model.getMarkerSet())
    rows = [plan.joint_index(m.getName()) for m in markers]
    targets = np.full((N_FRAMES, plan.n_joints, 3), np.nan)
    for i in range(N_FRAMES):
        for dep, (ind, fn) in couplers.items():  # what OpenSim's constraint enforces
            truth[dep][i] = fn.calcValue(osim.Vector(1, truth[ind][i]))
        for name, v in truth.items():
            coords.get(name).setValue(state, v[i], False)
        model.realizePosition(state)
        for r, m in zip(rows, markers, strict=True):
            p = m.getLocationInGround(state)
            targets[i, r] = [p.get(0), p.get(1), p.get(2)]
    cache = tmp_path_factory.mktemp("rajagopal_running") / "trial.npz"
    np.savez(cache, targets=targets, **truth)
    data = np.load(cache)
    return plan, data["targets"], {n: data[n] for n in truth}


def _noisy(targets):
    return targets + NOISE * np.random.default_rng(29).standard_normal(targets.shape)


def _iterations_ok(r):
    assert (r.stop_reason == CONVERGED).all(), np.bincount(r.stop_reason)
    assert not (r.stop_reason == MAX_ITERATIONS).any()
    assert np.median(r.iterations) <= 15 and r.iterations.max() <= 30, r.iterations


def test_exact_markers_converge_fast_to_opensims_angles(trial):
    plan, targets, truth = trial
    assert plan.n_dofs == 37 and len(plan.couplings) == 2
    r = solve_sequence(plan, targets)
    _iterations_ok(r)
    got = to_engine_configuration(plan, r.dof_value)
    for name, true in truth.items():
        err = np.abs(got[name] - true).max()
        if name.startswith("pelvis_t"):
            assert err < 2e-4, (name, err)  # m
        else:  # the prior's bias on the least observed (forearm) DOFs: ~0.1 degree
            assert np.degrees(err) < 0.25, (name, np.degrees(err))


def test_noisy_markers_converge_fast_to_the_least_squares_optimum(trial):
    plan, targets, truth = trial
    obs = _noisy(targets)
    r = solve_sequence(plan, obs)
    _iterations_ok(r)
    # locked coordinates stay exactly at their lock
    lock = np.flatnonzero(plan.lower == plan.upper)
    assert lock.size == 8
    assert (r.dof_value[:, lock] == plan.lower[lock]).all()
    # the optimum: scipy's least_squares on the same objective (prior included, locked
    # coordinates fixed), started from the truth, on a few frames
    nw = SolverConfig().effective(plan)[0]
    free = np.setdiff1d(np.arange(plan.n_dofs), lock)
    prior = np.sqrt(nw * plan.dof_weight_scalers[free])
    seen = np.isfinite(obs[0]).all(-1)
    true_q = from_engine_configuration(plan, truth).dof_values
    for t in (0, N_FRAMES // 2, N_FRAMES - 1):

        def residual(x, t=t):
            q = np.array(true_q[t])
            q[free] = x
            p = forward_kinematics(plan, q)[seen] - obs[t, seen]
            return np.concatenate([p.ravel(), prior * (x - plan.neutral[free])])

        fit = least_squares(residual, true_q[t, free], method="lm", xtol=1e-14, ftol=1e-14)
        ref = 2 * fit.cost
        assert r.objective[t] <= ref * (1 + 1e-6), (t, r.objective[t], ref)
