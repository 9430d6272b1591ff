"""Coordinate tasks in fits through calibrated cameras.

An OpenSim IK setup's coordinate tasks hold a coordinate in a multi-camera fit as they
do in a 3D fit of the same motion (they were dropped there once, so Pose2Sim's demo fitted
through its cameras ignored its setup's lumbar task).
"""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.bodyplan import mannequin
from pipeline.fit.view_setup import ViewSetup
from pipeline.solve import CoordinateTasks, SolverConfig
from pipeline.synth import SynthConfig, synthesize
from pipeline.synth.camera_views import ViewsConfig, render_views
from pipeline.tracks.mapping import map_keypoints
from tests.fixtures.multiview_rig import mannequin_rig


@pytest.fixture(scope="module")
def session():
    plan, cams = mannequin(), mannequin_rig(4)
    rng = np.random.default_rng(3)
    synth = synthesize(plan, SynthConfig(n_frames=12, unit="m", up_axis="y"), rng)
    points = synth.truth["position"].values[..., 0].transpose(0, 2, 1)  # (T, J, 3)
    pixels, confidence = render_views(points, cams, ViewsConfig(outliers=0.0), rng)
    return plan, cams, points, pixels, confidence


@pytest.mark.parametrize("multiview", ["direct", "triangulate"])
def test_a_coordinate_task_holds_its_coordinate_through_cameras(session, multiview):
    plan, cams, _, pixels, confidence = session
    mapping = map_keypoints(plan.joint_names, plan.joint_names)
    setup = ViewSetup("cameras", tuple(c.name for c in cams), tuple(cams), multiview)
    position = pixels.transpose(0, 1, 3, 2)  # (T, V, 2, J)
    dof = plan.dof_names[2]
    free, _ = setup.solve(plan, SolverConfig(), mapping, position, confidence)
    target = float(np.median(free.dof_value[:, 2])) + 0.4
    held, _ = setup.solve(
        plan, SolverConfig(), mapping, position, confidence,
        coordinate_tasks=CoordinateTasks({dof: 1e3}, {dof: target}),
    )  # fmt: skip
    assert np.abs(held.dof_value[:, 2] - target).max() < 0.05
    assert np.abs(free.dof_value[:, 2] - target).min() > 0.2
