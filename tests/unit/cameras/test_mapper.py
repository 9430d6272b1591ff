"""The solver fits 2D pixels through distorted calibrated cameras (CalibratedCameras)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from pipeline.bodyplan import mannequin
from pipeline.cameras import Camera, pack, project, triangulate
from pipeline.kinematics import compile_plan, forward_kinematics
from pipeline.solve import SolverConfig, solve_frames
from pipeline.solve.mappers import CalibratedCameras, as_mapper
from pipeline.solve.numpy.pose import clamp
from tests.unit.cameras.rig import FISHEYE, RADTAN, look_at


def mannequin_rig(n: int = 4) -> list[Camera]:
    """``n`` cameras 3 m around the mannequin (metres, +Y up), one of them fisheye."""
    cams = []
    for i in range(n):
        a = 2 * np.pi * i / n + 0.4
        rot, t = look_at((3.0 * np.cos(a), 0.4 + 0.15 * i, 3.0 * np.sin(a)), (0, 0, 0), (0, 1, 0))
        fish = i == n - 1
        cams.append(
            Camera(
                name=f"cam{i}",
                size=(1280, 1024),
                fx=620.0 if fish else 1100.0 + 7 * i,
                fy=619.5 if fish else 1099.0 + 7 * i,
                cx=640.0 + 3 * i,
                cy=512.0 - 2 * i,
                distortion="fisheye" if fish else "radtan",
                coefficients=FISHEYE if fish else RADTAN,
                rotation=rot,
                translation=t,
                unit="m",
            )
        )
    return cams


def _poses(plan, rng, n):
    """Random poses strictly inside the plan's limits (box and swing cones)."""
    q, _ = clamp(compile_plan(plan), plan.neutral + rng.normal(0, 0.25, (n, plan.n_dofs)))
    q = plan.neutral + 0.9 * (q - plan.neutral)
    root = rng.normal(0, 0.1, (n, 3))
    half = rng.normal(0, 0.1, (n, 3))
    quat = np.column_stack([np.ones(n), half])
    quat /= np.linalg.norm(quat, axis=1, keepdims=True)
    return q, root, quat


def test_mapper_projects_like_pipeline_cameras_and_like_the_pinhole_mapper(rng):
    cams = mannequin_rig()
    pos = rng.normal(0, 0.4, (6, 29, 3))
    mapper = as_mapper(cams)
    assert isinstance(mapper, CalibratedCameras) and mapper.n_views == 4 and mapper.dim == 2
    got = mapper.project(pos)
    assert got.shape == (6, 4, 29, 2)
    assert np.array_equal(got, project(pack(cams), pos[:, :, None]).transpose(0, 2, 1, 3))
    bare = [c.replace(distortion="none", coefficients=()) for c in cams]
    ours = CalibratedCameras(bare)
    pix = ours.project(pos)
    for k, c in enumerate(bare):  # the pinhole model as OpenCV projects it
        rvec = cv2.Rodrigues(np.asarray(c.rotation))[0]
        k_mat = np.array([[c.fx, 0, c.cx], [0, c.fy, c.cy], [0, 0, 1.0]])
        ref, _ = cv2.projectPoints(pos.reshape(-1, 3), rvec, np.asarray(c.translation), k_mat, None)
        assert np.allclose(pix[:, k], ref.reshape(6, 29, 2), atol=1e-9)
    step = 1e-6  # the Jacobian against central differences of the projection
    jac = ours.jacobian(pos)
    for axis in range(3):
        d = np.zeros(3)
        d[axis] = step
        fd = (ours.project(pos + d) - ours.project(pos - d)) / (2 * step)
        assert np.allclose(jac[..., axis], fd, atol=1e-4)
    assert isinstance(as_mapper(cams[0]), CalibratedCameras)


def _fit(plan, obs, weights, cams, init_root):
    cfg = SolverConfig(
        neutral_weight=0.0,
        n_iterations=200,
        position_tolerance=1e-12,
        angle_tolerance=1e-12,
        mode="lm",
    )
    init = {
        "dof_value": plan.neutral,
        "root_position": init_root,
        "root_orientation": np.array([1.0, 0.0, 0.0, 0.0]),
    }
    return solve_frames(plan, obs, weights, config=cfg, initial=init, mapper=cams)


def test_fit_recovers_the_angles_from_four_distorted_views(rng):
    plan = mannequin()
    cams = mannequin_rig()
    q, root, quat = _poses(plan, rng, 12)
    p3 = forward_kinematics(plan, q, root, quat)
    obs = as_mapper(cams).project(p3)  # (T, C, J, 2) pixels through the lenses
    assert np.isfinite(obs).all()
    inside = (obs >= 0).all(-1) & (obs[..., 0] < 1280) & (obs[..., 1] < 1024)
    assert inside.all()
    # cold start: the root from the triangulated pelvis, every DOF at neutral
    pelvis = triangulate(cams, obs[:, :, 0])
    r = _fit(plan, obs, None, cams, pelvis)
    assert r.rms_error.max() < 1e-6  # pixels
    assert np.abs(r.dof_value - q).max() < 1e-6  # rad
    assert np.abs(r.root_position - root).max() < 1e-8  # m


def test_noisy_pixels_with_confidences(rng):
    plan = mannequin()
    cams = mannequin_rig()
    q, root, quat = _poses(plan, rng, 12)
    p3 = forward_kinematics(plan, q, root, quat)
    obs = as_mapper(cams).project(p3) + rng.normal(0, 1.0, (12, 4, plan.n_joints, 2))
    conf = rng.uniform(0.6, 1.0, obs.shape[:-1])
    obs[:, 1:, 12] = np.nan  # the left thumb only seen by camera 0
    r = _fit(plan, obs, conf, cams, triangulate(cams, obs[:, :, 0], conf[:, :, 0]))
    err = np.abs(r.dof_value - q)
    assert np.median(err) < 0.02  # rad, 1 px noise at 3 m
    assert np.all(np.isfinite(r.fitted_position))
    # the one-view keypoint still lands close to the truth (the skeleton carries it)
    assert np.linalg.norm(r.fitted_position[:, 12] - p3[:, 12], axis=-1).max() < 0.02


def test_points_behind_a_camera_drop_out():
    cams = mannequin_rig(2)
    mapper = CalibratedCameras(cams)
    behind = cams[0].center - 1.0 * cams[0].rotation_matrix[2]
    pos = np.array([[behind, [0.0, 0.0, 0.0]]])
    pix, jac = mapper.project(pos), mapper.jacobian(pos)
    assert np.isnan(pix[0, 0, 0]).all() and np.all(jac[0, 0, 0] == 0)
    assert np.isfinite(pix[0, :, 1]).all()
    with pytest.raises(ValueError, match="at least one camera"):
        CalibratedCameras([])
