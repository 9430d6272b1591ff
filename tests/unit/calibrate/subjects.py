"""Synthetic subjects: a template's body scaled per symmetric group, markers off joints.

``make_subject`` draws an overall scale, one scale per side-symmetric segment group (up to
15 % from the template) and marker displacements of 2-5 % of the body size, and builds
the subject's true plan through the same parameters the calibration fits; ``render``
synthesizes a session of the subject with noise and dropouts.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from pipeline.bodyplan import Joint, load_body_plan, mannequin
from pipeline.bodyplan.model import BodyPlan
from pipeline.calibrate import CalibrationSpec, resolve
from pipeline.kinematics.fk_jacobian import joint_rotations_local
from pipeline.synth import SynthConfig, body_size, synthesize
from tests.fixtures.shared_data import QUICKIK

MANNEQUIN_MARKERS = ("thumb_l", "thumb_r", "heel_l", "heel_r")


def mannequin_template() -> BodyPlan:
    """The mannequin with its thumbs and heels declared as markers."""
    plan = mannequin()
    spec = CalibrationSpec(markers=MANNEQUIN_MARKERS)
    return dataclasses.replace(plan, calibration=spec.to_dict())


def fly_template() -> BodyPlan:
    """QuickIK's fly legs plus a marker at the middle of each tibia (fixed joints)."""
    plan = load_body_plan(QUICKIK / "neuromechfly_ypr_legs.json")
    joints = list(plan.joints)
    markers = []
    for leg in ("lf", "lm", "lh", "rf", "rm", "rh"):
        tibia = f"{leg}_trochanterfemur_tibia"
        tarsus = next(j for j in joints if j.name == f"{leg}_tibia_tarsus")
        at = joints.index(tarsus) + 1
        name = f"{leg}_tibia_marker"
        joints.insert(
            at, Joint(name, tibia, tuple(0.5 * v for v in tarsus.offset_pos), (1.0, 0, 0, 0))
        )
        markers.append(name)
    order = sorted(range(len(joints)), key=lambda i: i)  # already parents first
    joints = [joints[i] for i in order]
    spec = CalibrationSpec(markers=tuple(markers))
    return dataclasses.replace(plan, joints=tuple(joints), calibration=spec.to_dict())


def make_subject(template: BodyPlan, rng, *, scale=1.08, spread=0.15, exclude=()):
    """The subject's true plan and parameters (``theta``) for ``template``."""
    size = body_size(template)
    params = resolve(template, size=size)
    theta = params.theta0.copy()
    theta[0] = scale
    n_groups = len(params.group_names)
    theta[1 : 1 + n_groups] = scale * rng.uniform(-spread, spread, n_groups)
    for k in exclude:
        theta[1 + params.group_names.index(k)] = 0.0
    first = 1 + n_groups
    for k in range(len(params.markers)):
        v = rng.normal(size=3)
        theta[first + 3 * k : first + 3 * k + 3] = (
            v / np.linalg.norm(v) * rng.uniform(0.02, 0.05) * size
        )
    return params.apply(theta), theta, params


def render(plan, rng, *, n_frames=1000, noise=0.002, dropout=0.02, up="y", unit="m", session="s"):
    """A synthetic session of ``plan``: 0.2 % noise and 2 % dropouts by default."""
    cfg = SynthConfig(
        n_frames=n_frames, noise=noise, dropout=dropout, up_axis=up, unit=unit, fps=100.0
    )
    return synthesize(plan, cfg, rng, session=session)


def rotation_errors(plan_true, truth, fit) -> np.ndarray:
    """Angles (deg) between the fitted and true rotations of every joint with DOFs."""
    true_q = joint_rotations_local(plan_true, truth["dof_value"].values[:, 0])
    dot = np.abs(np.sum(true_q * np.asarray(fit.joint_rotation), axis=-1))
    moving = [i for i, j in enumerate(plan_true.joints) if j.dofs]
    return np.degrees(2 * np.arccos(np.clip(dot[:, moving], 0, 1))).ravel()


def targets_of(session) -> tuple[np.ndarray, np.ndarray]:
    """``(T, J, 3)`` targets and ``(T, J)`` confidences of individual 0."""
    pos = session.tracks["position"].values[..., 0].transpose(0, 2, 1)
    return pos, session.tracks["confidence"].values[..., 0]
