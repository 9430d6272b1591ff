"""The rig's pixels per length unit, and the weights it puts in pixel units.

:func:`rig_pixel_scale` is ``f / d`` for cameras at depth ``d`` looking at one point;
through those cameras the solver's neutral prior and coordinate-task weights are the 3D
ones times its square (:attr:`Mapper.residual_scale`), so they weigh against pixels as
they do against the same motion in lengths.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pipeline.bodyplan import mannequin
from pipeline.cameras import Camera
from pipeline.cameras.rig_scale import rig_pixel_scale
from pipeline.errors import CameraError
from pipeline.solve import CoordinateTasks, SolverConfig
from pipeline.solve.mappers import CalibratedCameras
from pipeline.solve.problem import prepare
from tests.fixtures.multiview_rig import look_at, mannequin_rig


def _ring(n: int, distance: float, f: float, target=(0.5, 1.0, -0.2)) -> list[Camera]:
    cams = []
    for i in range(n):
        a = 2 * np.pi * i / n
        center = np.asarray(target) + distance * np.array([np.cos(a), 0.0, np.sin(a)])
        rot, t = look_at(center, target, (0.0, 1.0, 0.0))
        cams.append(Camera(name=f"c{i}", size=(1280, 1024), fx=f, fy=f, cx=640.0, cy=512.0,
                           rotation=rot, translation=t, unit="m"))  # fmt: skip
    return cams


def test_cameras_looking_at_one_point_at_one_depth_give_f_over_d():
    assert rig_pixel_scale(_ring(4, 3.5, 1400.0)) == pytest.approx(1400.0 / 3.5, rel=1e-12)
    near, far = _ring(4, 2.0, 1000.0), _ring(4, 4.0, 1000.0)  # 90 degrees apart
    mixed = [near[0], far[1]]  # RMS of 500 and 250 px per m
    assert rig_pixel_scale(mixed) == pytest.approx(np.sqrt((500.0**2 + 250.0**2) / 2))


def test_no_scale_without_a_meeting_point_in_front():
    one = _ring(4, 3.5, 1400.0)[:1]
    assert rig_pixel_scale(one) is None
    a = _ring(4, 3.5, 1400.0)[0]
    shifted = tuple(float(v) for v in np.asarray(a.translation) + [0.3, 0.0, 0.0])
    beside = dataclasses.replace(a, name="b", translation=shifted)
    assert rig_pixel_scale([a, beside]) is None  # parallel axes
    assert CalibratedCameras([a]).residual_scale == 1.0


def test_prior_and_task_weights_are_stated_in_pixels_through_cameras():
    plan = mannequin()
    cams = mannequin_rig(4)
    k = rig_pixel_scale(cams)
    assert 100.0 < k < 1000.0  # 1100 px lenses 3.5 m away, a fisheye among them
    tasks = CoordinateTasks({plan.dof_names[0]: 2.0}, {plan.dof_names[0]: 0.1})
    cfg = SolverConfig()
    n = 3
    p3 = prepare(plan, np.zeros((n, plan.n_joints, 3)), None, cfg, None,
                 coordinate_tasks=tasks)  # fmt: skip
    pix = np.zeros((n, len(cams), plan.n_joints, 2))
    p2 = prepare(plan, pix, None, cfg, CalibratedCameras(cams), coordinate_tasks=tasks)
    assert p2.neutral_weight == pytest.approx(p3.neutral_weight * k**2, rel=1e-12)
    np.testing.assert_allclose(p2.task_weight, p3.task_weight * k**2, rtol=1e-12)
    given = CalibratedCameras(cams, pixel_scale=10.0)
    p10 = prepare(plan, pix, None, cfg, given, coordinate_tasks=tasks)
    assert p10.neutral_weight == pytest.approx(p3.neutral_weight * 100.0, rel=1e-12)


@pytest.mark.parametrize("bad", [0.0, -3.0, float("nan"), float("inf")])
def test_a_bad_pixel_scale_is_refused(bad):
    with pytest.raises(CameraError, match="pixel_scale: must be a positive number"):
        CalibratedCameras(mannequin_rig(2), pixel_scale=bad)
