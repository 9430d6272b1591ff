"""Compiled projection rows: pixels through calibrated cameras at compiled speed.

The compiled engine's multi-view fit equals the numpy engine's (the explicit-rows
reference, :mod:`pipeline.solve.numpy.normal`) to 1e-9 in float64: same iterations, same
poses, same objective, for l2 and robust losses, radtan and fisheye lenses, frames solved
alone and as a sequence; its normal matrix equals ``sum w (P J)^T (P J)`` built from the
cameras' exact Jacobian.
"""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.bodyplan import load_body_plan, mannequin
from pipeline.solve import SolverConfig, solve_frames, solve_sequence
from pipeline.solve.mappers import CalibratedCameras
from pipeline.synth import SynthConfig, synthesize
from pipeline.synth.camera_views import ViewsConfig, render_views
from tests.fixtures.multiview_rig import fly_rig, mannequin_rig

pytestmark = pytest.mark.slow  # the numpy reference takes about two minutes

FIELDS = ("dof_value", "root_position", "root_orientation", "fitted_position", "objective")


def _session(plan, cams, n, seed, unit):
    up = "y" if unit == "m" else "z"
    s = synthesize(
        plan, SynthConfig(n_frames=n, unit=unit, up_axis=up), np.random.default_rng(seed)
    )
    points = s.truth["position"].values[..., 0].transpose(0, 2, 1)
    return render_views(points, cams, ViewsConfig(), np.random.default_rng(seed + 1))


@pytest.fixture(scope="module", params=["fly", "mannequin"])
def rig(request, fly_plan_path):
    if request.param == "fly":
        plan, cams = load_body_plan(fly_plan_path), fly_rig(4)
        return plan, cams, *_session(plan, cams, 24, 0, "mm")
    plan, cams = mannequin(), mannequin_rig(3)
    return plan, cams, *_session(plan, cams, 24, 2, "m")


def _agree(a, b):
    np.testing.assert_array_equal(a.iterations, b.iterations)
    np.testing.assert_array_equal(a.stop_reason, b.stop_reason)
    for name in FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        scale = max(1.0, float(np.max(np.abs(x))))
        assert float(np.max(np.abs(x - y))) <= 1e-9 * scale, name


@pytest.mark.parametrize("loss", ["l2", "cauchy", "huber"])
def test_compiled_frames_equal_numpy_frames(rig, loss):
    plan, cams, pix, conf = rig
    mapper = CalibratedCameras(cams)
    got = {}
    for engine in ("compiled", "numpy"):
        cfg = SolverConfig(loss=loss, loss_scale=4.0, engine=engine)
        got[engine] = solve_frames(plan, pix, conf, cfg, mapper=mapper)
    _agree(got["compiled"], got["numpy"])
    assert got["compiled"].converged.mean() > 0.9


@pytest.mark.parametrize("tolerance_on", ["step", "distance"])
def test_compiled_sequence_equals_numpy_single_lane(rig, tolerance_on):
    plan, cams, pix, conf = rig
    mapper = CalibratedCameras(cams)
    got = {
        engine: solve_sequence(
            plan,
            pix,
            conf,
            SolverConfig(engine=engine, lanes=1, tolerance_on=tolerance_on),
            mapper=mapper,
        )
        for engine in ("compiled", "numpy")
    }
    _agree(got["compiled"], got["numpy"])


def test_auto_picks_the_compiled_engine_for_calibrated_cameras(rig):
    plan, cams, pix, conf = rig
    mapper = CalibratedCameras(cams)
    auto = solve_frames(plan, pix[:3], conf[:3], SolverConfig(), mapper=mapper)
    compiled = solve_frames(plan, pix[:3], conf[:3], SolverConfig(engine="compiled"), mapper=mapper)
    np.testing.assert_array_equal(auto.dof_value, compiled.dof_value)
