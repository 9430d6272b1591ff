"""MJCF import checked against MuJoCo's own forward kinematics (``mj_kinematics``)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from pipeline.bodyplan import BodyPlanError, load_body_plan
from pipeline.bodyplan.engine_config import from_engine_configuration, to_engine_configuration
from pipeline.bodyplan.importers import ConversionWarning, plan_unit
from pipeline.bodyplan.importers.mjcf import import_mjcf, load_mujoco_model
from pipeline.kinematics import forward_kinematics
from pipeline.kinematics.rotations import quat_normalize
from tests.fixtures.shared_data import QUICKIK

from .models import MJCF, MJCF_FILES, need

mujoco = need("mujoco", "mjcf")


def _import(path, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return import_mjcf(path, **options)


def _random_qpos(m, rng) -> np.ndarray:
    """qpos inside every limited range (unlimited hinges within +-pi)."""
    qpos = m.qpos0.copy()
    for j in range(m.njnt):
        i = m.jnt_qposadr[j]
        kind = m.jnt_type[j]
        if kind == 0:
            qpos[i : i + 3] = rng.normal(size=3)
            qpos[i + 3 : i + 7] = quat_normalize(rng.normal(size=4))
        elif kind == 1:
            qpos[i : i + 4] = quat_normalize(rng.normal(size=4))
        else:
            lo, hi = m.jnt_range[j] if m.jnt_limited[j] else (-np.pi, np.pi)
            qpos[i] = rng.uniform(lo, hi)
    return qpos


def _compare(plan, m, qpos) -> tuple[float, float]:
    """Largest position and rotation-matrix difference of all bodies and sites."""
    d = mujoco.MjData(m)
    d.qpos[:] = qpos
    mujoco.mj_kinematics(m, d)
    pose = from_engine_configuration(plan, qpos)
    pos, rot = forward_kinematics(
        plan, pose.dof_values, pose.root_position, pose.root_orientation, return_rotations=True
    )
    dp = dr = 0.0
    for b in range(1, m.nbody):
        k = plan.joint_index(mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, b))
        dp = max(dp, float(np.abs(pos[k] - d.xpos[b]).max()))
        dr = max(dr, float(np.abs(rot[k] - d.xmat[b].reshape(3, 3)).max()))
    for s in range(m.nsite):
        name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_SITE, s)
        if name in plan.joint_names:
            dp = max(dp, float(np.abs(pos[plan.joint_index(name)] - d.site_xpos[s]).max()))
    return dp, dr


@pytest.mark.parametrize("name", MJCF_FILES)
def test_fk_equals_mujoco_at_rest_and_random_configs(name, rng):
    path = MJCF / name
    plan = _import(path, sites=True)
    m = load_mujoco_model(path)
    assert plan.n_dofs == sum({0: 0, 1: 3, 2: 1, 3: 1}[int(t)] for t in m.jnt_type)
    assert plan.fixed_base == (0 not in m.jnt_type)
    for body in range(m.nbody if plan.joints[0].name == "world" else 1, m.nbody):
        assert mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, body) in plan.joint_names
    assert _compare(plan, m, m.qpos0) < (1e-9, 1e-9)
    for _ in range(10):
        qpos = _random_qpos(m, rng)
        dp, dr = _compare(plan, m, qpos)
        assert dp < 1e-9 and dr < 1e-9, (name, dp, dr)
        back = to_engine_configuration(plan, *from_engine_configuration(plan, qpos))
        np.testing.assert_allclose(back, qpos, atol=1e-12)


@pytest.mark.parametrize(
    "name", ["unitree_g1", "unitree_h1", "franka_panda", "neuromechfly_seqik_kinorder_ypr"]
)
def test_originals_load_without_their_mesh_files(name):
    assert _import(MJCF / f"{name}.xml") == _import(MJCF / f"{name}.nomesh.xml")


def test_ranges_units_and_source():
    g1 = _import(MJCF / "unitree_g1.nomesh.xml")
    knee = g1.dof_names.index("left_knee_joint")
    assert (g1.lower[knee], g1.upper[knee]) == pytest.approx((-0.087267, 2.8798))
    assert plan_unit(g1) == "m"
    assert g1.extras["x-source"]["format"] == "mjcf"
    fly = _import(MJCF / "neuromechfly_seqik_kinorder_ypr.nomesh.xml")
    assert plan_unit(fly) == "mm"  # gravity -9810
    assert np.all(np.isinf(fly.lower)) and fly.n_dofs == 87  # no ranges in the file
    assert {"FlyBody", "Thorax", "A1A2", "LWing"} <= set(fly.joint_names)  # fusestatic off
    cmu = _import(MJCF / "humanoid_CMU.xml")  # degrees in the XML, radians in the plan
    hi = cmu.upper[cmu.dof_names.index("lfemurrx")]
    assert hi == pytest.approx(np.radians(70), abs=1e-9) or abs(hi) < 2 * np.pi
    with pytest.raises(BodyPlanError, match="no site named 'nope'"):
        _import(MJCF / "unitree_g1.nomesh.xml", sites=["nope"])


def test_neuromechfly_matches_quickik_plan():
    """Shared leg keypoints agree at the synthetic frames' angles (right legs mirrored)."""
    quick = load_body_plan(QUICKIK / "neuromechfly_ypr_legs.json")
    fly = _import(MJCF / "neuromechfly_seqik_kinorder_ypr.nomesh.xml")
    frames = json.loads((QUICKIK / "fixtures.json").read_text())["synthetic_frames"]
    angles = np.array([np.concatenate(f["ground_truth_dof_angles_per_leg"]) for f in frames])
    legs = ("lf", "lm", "lh", "rf", "rm", "rh")
    parts = (
        ("thorax_coxa", "Coxa"),
        ("coxa_trochanterfemur", "Femur"),
        ("trochanterfemur_tibia", "Tibia"),
        ("tibia_tarsus", "Tarsus1"),
    )
    mj_dofs = ("Coxa_yaw", "Coxa", "Coxa_roll", "Femur", "Femur_roll", "Tibia", "Tarsus1")
    q = np.zeros((len(frames), fly.n_dofs))
    for leg_i, leg in enumerate(legs):
        for k, dof in enumerate(mj_dofs):
            value = angles[:, 7 * leg_i + k]
            mirrored = leg[0] == "r" and dof in ("Coxa_yaw", "Coxa_roll", "Femur_roll")
            q[:, fly.dof_names.index(f"joint_{leg.upper()}{dof}")] = -value if mirrored else value
    pa = forward_kinematics(quick, angles)
    pb, rb = forward_kinematics(fly, q, return_rotations=True)
    thorax = fly.joint_index("Thorax")
    local = np.einsum("tji,tkj->tki", rb[:, thorax], pb - pb[:, thorax, None])
    worst = 0.0
    for leg in legs:
        for ours, theirs in parts:
            a = pa[:, quick.joint_index(f"{leg}_{ours}")]
            b = local[:, fly.joint_index(f"{leg.upper()}{theirs}")]
            worst = max(worst, float(np.abs(a - b).max()))
    assert worst < 3e-3  # mm: measured 1.2 um (QuickIK rounds offsets to 3 digits)


SYNTHETIC = """<mujoco model="probe">
  <compiler angle="degree"/>
  <worldbody>
    <body name="base" pos="0.1 0.2 0.3" euler="10 20 30">
      <freejoint/>
      <body name="arm" pos="0 0 0.5" quat="0.9 0.1 0.3 0.2">
        <joint name="swing" type="hinge" axis="1 1 0" pos="0.05 0 0.02" range="-60 60" ref="15"/>
        <joint name="reach" type="slide" axis="0 0 1" range="-0.1 0.2"/>
        <body name="hand" pos="0.3 0 0">
          <joint name="wrist" type="ball" range="0 80"/>
          <site name="tip" pos="0.1 0.01 0"/>
          <body name="finger" pos="0.05 0 0"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def test_anchors_refs_slides_and_balls_equal_mujoco(tmp_path, rng):
    path = tmp_path / "probe.xml"
    path.write_text(SYNTHETIC)
    plan = import_mjcf(path, sites=["tip"])
    m = load_mujoco_model(path)
    assert plan.version == 2  # the ball joint
    hand = plan.joints[plan.joint_index("hand")]
    assert hand.kind is not None and hand.kind.swing_limit == pytest.approx((np.radians(80),) * 2)
    swing = plan.dof_names.index("swing")
    assert plan.lower[swing] == pytest.approx(np.radians(-75))  # range minus ref
    for _ in range(20):
        dp, dr = _compare(plan, m, _random_qpos(m, rng))
        assert dp < 1e-9 and dr < 1e-9


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (
            '<mujoco><worldbody><body name="a"><joint type="spiral"/>',
            r"probe\.xml: not a well-formed MJCF XML file: .* line \d+",
        ),
        (
            '<mujoco><worldbody><body name="a"><joint name="j" type="spiral"/><geom size="1"/>'
            "</body></worldbody></mujoco>",
            r"probe\.xml: MuJoCo cannot compile .*spiral",
        ),
        (
            '<mujoco><worldbody><body name="a"><geom size="1"/></body><body name="b">'
            '<freejoint name="f"/><geom size="1"/></body></worldbody></mujoco>',
            r"probe\.xml: <joint name=\"f\">.*in body 'b': a free joint below the root",
        ),
        ('<robot name="x"/>', r"probe\.xml: root element is <robot>, not <mujoco>"),
    ],
)
def test_bad_mjcf_names_file_and_element(tmp_path, body, match):
    path = tmp_path / "probe.xml"
    path.write_text(body)
    with pytest.raises(BodyPlanError, match=match):
        import_mjcf(path)


COUPLED = """<mujoco>
  <worldbody>
    <body name="a"><joint name="j1" axis="0 0 1"/><geom size="0.1"/>
      <body name="b" pos="1 0 0"><joint name="j2" axis="0 0 1"/><geom size="0.1"/>
        <body name="c" pos="1 0 0"><geom size="0.1"/></body></body></body>
  </worldbody>
  <tendon><fixed name="t"><joint joint="j1" coef="1"/><joint joint="j2" coef="-1"/></fixed></tendon>
  <equality>{equality}</equality>
</mujoco>
"""


def test_tendon_coupled_joint_is_refused(tmp_path):
    path = tmp_path / "coupled.xml"
    path.write_text(COUPLED.format(equality='<tendon tendon1="t"/>'))
    with pytest.raises(
        BodyPlanError,
        match=r"coupled\.xml: <equality><tendon> \(line 8\): a tendon "
        r"equality couples joints 'j1', 'j2'",
    ):
        import_mjcf(path)


def test_joint_equality_is_reported_or_refused(tmp_path):
    path = tmp_path / "coupled.xml"
    path.write_text(COUPLED.format(equality='<joint joint1="j2" joint2="j1"/>'))
    with pytest.warns(
        ConversionWarning,
        match=r"<equality><joint> \(line 8\): joint 'j2' is "
        r"coupled to 'j1'",
    ):
        plan = import_mjcf(path)
    assert plan.extras["x-source"]["couplings"][0]["joint"] == "j2"
    with pytest.raises(BodyPlanError, match="strict import refuses it"):
        import_mjcf(path, strict=True)
    with pytest.warns(ConversionWarning, match="'finger_joint1' is coupled to 'finger_joint2'"):
        import_mjcf(MJCF / "franka_panda.nomesh.xml")
