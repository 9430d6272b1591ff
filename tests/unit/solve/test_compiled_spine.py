"""The compiled engine on couplings that nest or reach across branches (Pose2Sim's spine).

Pose2Sim's BODY_25B model drives the joints of its lumbar vertebrae, one above the other,
and the abdomen's joint beside them by the three L5/S1 coordinates (20 coupler
constraints); the abdomen has coordinates of its own. The compiled engine takes the
nested groups' cross terms and the abdomen under the lumbar coordinates in its
elimination tree (:mod:`pipeline.solve.compiled.coupled_terms`): its normal equations
equal central finite differences of the forward kinematics, and its fits through
calibrated cameras equal the numpy engine's. A coupling no elimination tree holds (one
leg's knee driving the other leg) is refused by name and solved on the numpy engine.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest

from pipeline.bodyplan import load_body_plan
from pipeline.errors import ConfigError
from pipeline.kinematics import forward_kinematics
from pipeline.kinematics.step_groups import compiled_refusal
from pipeline.solve import SolverConfig, solve_frames
from pipeline.solve.mappers import CalibratedCameras
from pipeline.synth.camera_views import ViewsConfig, render_views
from tests.fixtures.multiview_rig import mannequin_rig
from tests.fixtures.shared_data import SHARED
from tests.unit.bodyplan.coupled_samples import coupled
from tests.unit.solve.test_compiled_coupled import (
    TIGHT,
    _kernel_normal,
    _numeric_jacobian,
    _poses,
    _tangled,
)

POSE2SIM = SHARED / "data" / "pose2sim" / "opensim" / "Model_Pose2Sim_body25b_scaled.osim"


@pytest.fixture(scope="module")
def spine():
    pytest.importorskip("opensim")
    from pipeline.bodyplan.importers.osim import import_osim

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return import_osim(POSE2SIM)


def _cross_legged():
    """The coupled sample with a second leg (first in joint order) that the knee also turns.

    The knee meets both hips, which are side by side: no tree over the state order has
    both above it.
    """
    data = coupled()
    data["joints"].insert(
        1,
        {"name": "hip2", "parent": "root", "offset_pos": [0.2, 0.0, 0.1],
         "offset_quat": [1.0, 0.0, 0.0, 0.0],
         "dofs": [{"name": "hip2", "type": "hinge", "axis": [0, 0, 1], "neutral": 0.0,
                   "limits": None},
                  {"type": "hinge", "axis": [1, 0, 0], "coordinate": "knee",
                   "function": {"type": "LinearFunction", "coefficients": [0.5, 0.0]}}]}
    )  # fmt: skip
    data["joints"].insert(
        2,
        {"name": "foot2", "parent": "hip2", "offset_pos": [0.0, -0.4, 0.0],
         "offset_quat": [1.0, 0.0, 0.0, 0.0], "dofs": []}
    )  # fmt: skip
    return load_body_plan(data)


def test_pose2sim_and_the_tangled_sample_take_the_compiled_engine(spine):
    from pipeline.solve.compiled.tables import tables

    assert compiled_refusal(spine) is None and compiled_refusal(_tangled()) is None
    tb = tables(spine)
    assert tb.fix_int.shape[0] > 0  # the nested vertebrae's cross terms
    names = spine.dof_names
    abs_t1 = tb.n_root + names.index("Abs_t1")
    lumbar = {tb.n_root + names.index(n) for n in ("L5_S1_Flex_Ext", "L5_S1_axial_rotation")}
    assert lumbar <= set(tb.ancestors[abs_t1, : tb.local_depth[abs_t1]].tolist())


@pytest.mark.parametrize("which", ["spine", "tangled"])
def test_normal_equations_equal_finite_differences(which, spine, rng):
    p = spine if which == "spine" else _tangled()
    q = _poses(p, rng, 1, spread=0.5)[0]
    rp, rq = np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0])
    if not p.fixed_base:
        rp = rng.normal(0.0, 0.3, 3)
        rq = rng.normal(size=4)
        rq /= np.linalg.norm(rq)
    target = forward_kinematics(p, q, rp, rq) + rng.normal(0.0, 0.02, (p.n_joints, 3))
    target[::5] = np.nan
    weight = rng.uniform(0.2, 2.0, p.n_joints)
    h, g, res, w = _kernel_normal(p, q, rp, rq, target, weight)
    jac = _numeric_jacobian(p, q, rp, rq).reshape(-1, h.shape[0])
    ww = np.repeat(w, 3)
    np.testing.assert_allclose(h, jac.T @ (ww[:, None] * jac), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(g, jac.T @ (ww * res.reshape(-1)), rtol=1e-6, atol=1e-7)


def test_fits_through_cameras_equal_the_numpy_engine(spine, rng):
    cams = mannequin_rig(4)
    q = _poses(spine, rng, 4, spread=0.15)
    points = forward_kinematics(spine, q)
    pelvis = spine.joint_names.index("pelvis")
    points -= points[:, pelvis : pelvis + 1].mean(axis=0, keepdims=True)  # at the rig's centre
    pix, conf = render_views(points, cams, ViewsConfig(), np.random.default_rng(7))
    mapper = CalibratedCameras(cams)
    got = {
        engine: solve_frames(spine, pix, conf, SolverConfig(engine=engine), mapper=mapper)
        for engine in ("compiled", "numpy")
    }
    a, b = got["compiled"], got["numpy"]
    np.testing.assert_array_equal(a.iterations, b.iterations)
    np.testing.assert_array_equal(a.converged, b.converged)
    assert a.converged.sum() >= 2
    done = a.converged
    np.testing.assert_allclose(a.dof_value[done], b.dof_value[done], atol=1e-10)
    # frames at the iteration cap creep along weakly observed directions: rounding shows
    np.testing.assert_allclose(a.dof_value, b.dof_value, atol=1e-6)
    np.testing.assert_allclose(a.objective[done], b.objective[done], rtol=1e-12)
    np.testing.assert_allclose(a.objective, b.objective, rtol=1e-7)


def test_a_coupling_across_legs_is_refused_and_runs_on_numpy(rng):
    plan = _cross_legged()
    why = compiled_refusal(plan)
    assert "'hip2'" in why and "'knee'" in why
    q = rng.uniform(-0.3, 0.1, (2, plan.n_dofs))
    targets = forward_kinematics(plan, q)
    fit = solve_frames(plan, targets, config=replace(TIGHT, cold_root="origin"))
    np.testing.assert_allclose(fit.fitted_position, targets, atol=1e-7)
    with pytest.raises(ConfigError, match=r"'compiled' cannot solve these couplings.*'hip2'"):
        solve_frames(plan, targets, config=SolverConfig(engine="compiled"))
