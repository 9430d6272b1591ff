"""The cold start of fits through two or more calibrated cameras.

A cold frame starts from the 3D fit of what the cameras triangulate
(:func:`pipeline.solve.dispatch.triangulated_start`, set as the problem's
``cold_refine`` by the solver's front end): its keypoints are where the
cameras put them, not the neutral pose's (a pixel fit from neutral joints once turned
Pose2Sim's left arm 156 degrees the other way).
"""

from __future__ import annotations

import numpy as np

from pipeline.bodyplan import mannequin
from pipeline.kinematics import forward_kinematics
from pipeline.solve import SolverConfig
from pipeline.solve.dispatch import prepare_problem
from pipeline.solve.mappers import CalibratedCameras
from pipeline.solve.numpy.pose import cold_pose
from pipeline.synth import SynthConfig, synthesize
from pipeline.synth.camera_views import ViewsConfig, render_views
from tests.fixtures.multiview_rig import mannequin_rig


def _session():
    plan, cams = mannequin(), mannequin_rig(4)
    rng = np.random.default_rng(3)
    synth = synthesize(plan, SynthConfig(n_frames=12, unit="m", up_axis="y"), rng)
    points = synth.truth["position"].values[..., 0].transpose(0, 2, 1)  # (T, J, 3)
    pixels, confidence = render_views(points, cams, ViewsConfig(outliers=0.0), rng)
    return plan, cams, points, pixels, confidence


def test_a_cold_frame_starts_at_the_cameras_3d_points():
    plan, cams, points, pixels, confidence = _session()
    prob, _ = prepare_problem(plan, pixels, confidence, SolverConfig(), CalibratedCameras(cams))
    start = cold_pose(prob, np.arange(prob.n_frames))
    got = forward_kinematics(plan, start.q, start.root_pos, start.root_quat)
    neutral = forward_kinematics(plan, np.broadcast_to(plan.neutral, start.q.shape),
                                 start.root_pos, start.root_quat)  # fmt: skip
    off = np.linalg.norm(got - points, axis=-1)
    before = np.linalg.norm(neutral - points, axis=-1)
    assert np.median(off) < 0.02 < np.median(before)  # metres: at the points, not neutral


def test_origin_cold_root_and_one_camera_keep_the_neutral_start():
    plan, cams, _, pixels, confidence = _session()
    prob, _ = prepare_problem(plan, pixels, confidence, SolverConfig(cold_root="origin"),
                              CalibratedCameras(cams))  # fmt: skip
    np.testing.assert_array_equal(cold_pose(prob, np.arange(3)).q, np.broadcast_to(
        prob.model.neutral, (3, plan.n_dofs)))  # fmt: skip
    one, _ = prepare_problem(
        plan, pixels[:, :1], confidence[:, :1], SolverConfig(), CalibratedCameras(cams[:1])
    )
    np.testing.assert_array_equal(cold_pose(one, np.arange(3)).q, np.broadcast_to(
        one.model.neutral, (3, plan.n_dofs)))  # fmt: skip
