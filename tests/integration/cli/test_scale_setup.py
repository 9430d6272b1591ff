"""``kinefit calibrate --opensim-setup`` on OpenSim's own Gait2392 Scale setup, held against
the scaled model OpenSim's Scale tool published (``subject01_simbody.osim``), OpenSim's own
loader and forward kinematics, and OpenSim's published IK of the walk."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from flows.cli import app
from pipeline.tracks.opensim_storage import read_storage
from tests.fixtures.shared_data import SHARED

osim = pytest.importorskip("opensim")
osim.Logger.setLevelString("error")

DATA = SHARED / "data" / "opensim" / "gait2392"
SCALE = DATA / "subject01_Setup_Scale.xml"
IK = DATA / "subject01_Setup_IK.xml"
PUBLISHED = DATA / "subject01_simbody.osim"
# the setup's generic gait2392_simbody.osim under its later name
GENERIC = SHARED / "data" / "models" / "osim" / "gait2392_thelen2003muscle.osim"
runner = CliRunner()


def _scale_setup(tmp: Path, **changes: str) -> Path:
    """The Scale setup in ``tmp`` with absolute input paths and ``changes`` applied.

    ``changes`` maps a path under ``ScaleTool`` (``ModelScaler/marker_file``) to its text,
    or ``pair:OLD`` to a new marker name in the measurements' marker pairs, or ``task:OLD``
    to a new name for a marker placer task.
    """
    tree = ET.parse(SCALE)
    tool = tree.getroot().find("ScaleTool")
    tool.find("GenericModelMaker/model_file").text = str(GENERIC)
    tool.find("GenericModelMaker/marker_set_file").text = str(DATA / "gait2392_Scale_MarkerSet.xml")
    for tag in ("ModelScaler/marker_file", "MarkerPlacer/marker_file"):
        tool.find(tag).text = str(DATA / "subject01_static.trc")
    for tag, value in changes.items():
        if tag.startswith("pair:"):
            for node in tool.iter("markers"):
                node.text = node.text.replace(tag[5:], value)
        elif tag.startswith("task:"):
            for node in tool.iter("IKMarkerTask"):
                if node.get("name") == tag[5:]:
                    node.set("name", value)
        else:
            tool.find(tag).text = value
    out = tmp / SCALE.name
    tree.write(out)
    return out


def _calibrate(*args) -> object:
    return runner.invoke(app, ["calibrate", *map(str, args)])


@pytest.fixture(scope="module")
def scaled(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("scale")
    out = tmp / "subject01_kinefit.osim"
    result = _calibrate("--opensim-setup", _scale_setup(tmp), "--out", out)
    assert result.exit_code == 0, result.output
    print(result.output)
    return out


def _geometry_factors(model_file: Path) -> dict[str, np.ndarray]:
    """Per body, the scale OpenSim records on its attached geometry."""
    out = {}
    for body in ET.parse(model_file).getroot().iter("Body"):
        node = body.find("attached_geometry")
        if node is not None and len(node):
            out[body.get("name")] = np.array(
                [float(v) for v in node[0].find("scale_factors").text.split()]
            )
    return out


def _frame_factors(model_file: Path) -> dict[str, float]:
    """Per body, |translation| of the joint frames on it over the generic model's."""

    def lengths(path: Path) -> dict[tuple[str, str], float]:
        out = {}
        for joint in ET.parse(path).getroot().iter("CustomJoint"):
            for frame in joint.iter("PhysicalOffsetFrame"):
                body = frame.find("socket_parent").text.split("/")[-1]
                t = np.array([float(v) for v in frame.find("translation").text.split()])
                if np.linalg.norm(t) > 0.01:
                    out[(joint.get("name"), body)] = float(np.linalg.norm(t))
        return out

    mine, generic = lengths(model_file), lengths(GENERIC)
    return {body: mine[key] / generic[key] for key in generic for body in [key[1]]}


def _measured_bodies() -> set[str]:
    tool = ET.parse(SCALE).getroot().find("ScaleTool")
    return {b.get("name") for b in tool.iter("BodyScale")}


def test_scale_factors_within_2_percent_of_opensims_scaled_model(scaled):
    mine, ref = _geometry_factors(scaled), _geometry_factors(PUBLISHED)
    generic = _geometry_factors(GENERIC)
    bodies = sorted(_measured_bodies() & set(ref))
    assert len(bodies) == 12  # every body of gait2392; the patellae are not in it
    for body in bodies:
        want = ref[body] / generic[body]
        print(f"{body:8s} kinefit {mine[body][0]:.6f} OpenSim {want[0]:.6f}")
        np.testing.assert_allclose(mine[body], want, rtol=0.02)
        np.testing.assert_allclose(mine[body], want, rtol=1e-5)  # in fact to its 6 digits
    # the joint frames carried along: the hips on the pelvis, the knees on the femurs
    frames = _frame_factors(scaled)
    for body, factor in frames.items():
        assert factor == pytest.approx(mine[body][0], rel=1e-9), body


def _markers_and_bodies(model_file: Path, defaults: dict[str, float]):
    model = osim.Model(str(model_file))
    state = model.initSystem()
    for name, value in defaults.items():
        model.getCoordinateSet().get(name).setValue(state, value, False)
    model.realizePosition(state)
    loc = {}
    for m in model.getMarkerSet():
        p = m.getLocationInGround(state)
        loc[m.getName()] = np.array([p.get(i) for i in range(3)])
    for b in model.getBodySet():
        p = b.getPositionInGround(state)
        loc["body:" + b.getName()] = np.array([p.get(i) for i in range(3)])
    return loc


def test_scaled_model_is_opensims_and_loads_in_kinefit(scaled):
    """OpenSim loads it; its bodies and placed markers are where OpenSim's scaled model has
    them (same coordinates; the generic model's pelvis_ty default moved since), and
    kinefit's importer puts its markers where OpenSim does."""
    from pipeline.bodyplan.importers.osim import import_osim
    from pipeline.kinematics.fk_jacobian import forward_kinematics

    pose = {"pelvis_ty": 1.0, "knee_angle_r": -0.6, "hip_flexion_l": 0.4}
    mine = _markers_and_bodies(scaled, pose)
    ref = _markers_and_bodies(PUBLISHED, pose)
    assert set(mine) == set(ref) and len(mine) == 39 + 12
    worst = max(np.linalg.norm(mine[k] - ref[k]) for k in ref)
    print(f"largest body/marker distance to OpenSim's scaled model: {worst * 1e3:.4f} mm")
    assert worst < 1e-5  # 0.01 mm: the published file's digits
    with pytest.warns(UserWarning):  # mtp has no marker below it
        plan = import_osim(scaled)
    rest = _markers_and_bodies(scaled, {})
    fk = np.asarray(forward_kinematics(plan, plan.neutral))
    names = plan.joint_names
    for marker in (k for k in rest if not k.startswith("body:")):
        np.testing.assert_allclose(fk[names.index(marker)], rest[marker], atol=1e-9)


def test_scale_set_and_static_pose_files_open_in_opensim(scaled):
    """The applied factors as an OpenSim ScaleSet; the static pose as a Storage that puts
    the placed markers (OpenSim's forward kinematics) on the averaged static trial."""
    from pipeline.tracks.readers import trc

    scale_set = osim.ScaleSet(str(scaled.parent / "subject01_scaleSet_applied.xml"))
    geometry = _geometry_factors(scaled)
    assert scale_set.getSize() == 12
    for i in range(scale_set.getSize()):
        s = scale_set.get(i)
        f = s.getScaleFactors()
        np.testing.assert_allclose([f.get(k) for k in range(3)], geometry[s.getSegmentName()])
    motion = scaled.parent / "subject01_static_output.mot"
    assert osim.Storage(str(motion)).getSize() == 1
    pose = read_storage(motion)
    model = osim.Model(str(scaled))
    state = model.initSystem()
    cs = model.getCoordinateSet()
    for c in [str(c) for c in pose["coordinate"].values]:
        v = float(pose["value"].sel(coordinate=c).values[0])
        coord = cs.get(c)
        coord.setValue(state, np.radians(v) if coord.getMotionType() == 1 else v, False)
    model.realizePosition(state)
    static = trc.read(DATA / "subject01_static.trc")
    t = static["time"].values
    frames = static["position"].isel(individual=0, time=np.flatnonzero((t >= 1) & (t <= 2)))
    mean = frames.mean("time").transpose("keypoint", "space") / 1000.0  # mm
    for m in model.getMarkerSet():
        p = m.getLocationInGround(state)
        want = mean.sel(keypoint=m.getName()).values
        np.testing.assert_allclose([p.get(k) for k in range(3)], want, atol=1e-6)


def test_walk_with_kinefits_scaled_model_matches_published_angles(scaled, tmp_path):
    tree = ET.parse(IK)
    tool = tree.getroot().find("InverseKinematicsTool")
    tool.find("model_file").text = str(scaled)
    tool.find("marker_file").text = str(DATA / "subject01_walk1.trc")
    tool.find("time_range").text = "0.5 0.7"  # 13 frames of the 2 s walk
    setup = tmp_path / IK.name
    tree.write(setup)
    result = runner.invoke(app, ["ik", str(setup), "--output", str(tmp_path)])
    assert result.exit_code == 0, result.output
    mine = read_storage(tmp_path / "subject01_walk1_ik.mot")
    ref = read_storage(DATA / "subject01_walk1_ik.mot")
    t = mine["time"].values
    assert t.size == 13
    for c in [str(c) for c in mine["coordinate"].values]:
        b = np.interp(t, ref["time"].values, ref["value"].sel(coordinate=c).values)
        d = mine["value"].sel(coordinate=c).values - b
        rms = float(np.sqrt(np.mean(d * d)))
        print(f"{c:18s} RMS {rms:.4f}")
        limit = 1e-3 if c in ("pelvis_tx", "pelvis_ty", "pelvis_tz") else 1.0  # m, deg
        assert rms < limit, c


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        (
            {"GenericModelMaker/model_file": "nowhere.osim"},
            "ScaleTool.GenericModelMaker.model_file: 'nowhere.osim' not found",
        ),
        (
            {"ModelScaler/marker_file": "nowhere.trc"},
            "ScaleTool.ModelScaler.marker_file: 'nowhere.trc' not found",
        ),
        (
            {"MarkerPlacer/marker_file": "nowhere.trc"},
            "ScaleTool.MarkerPlacer.marker_file: 'nowhere.trc' not found",
        ),
        (
            {"pair:R.Heel": "No.Such.Marker"},
            "Measurement['foot'].MarkerPair[0].markers: no marker 'No.Such.Marker' in the model",
        ),
        (
            {"task:Sternum": "No.Such.Marker"},
            "MarkerPlacer.IKTaskSet.IKMarkerTask['No.Such.Marker']: no marker",
        ),
        ({"ModelScaler/scaling_order": "measurements guess"}, "scaling_order: 'guess'; valid"),
    ],
)
def test_bad_setups_name_file_and_field_and_write_nothing(tmp_path, changes, needle):
    setup = _scale_setup(tmp_path, **changes)
    out = tmp_path / "out"
    result = _calibrate("--opensim-setup", setup, "--out", out / "scaled.osim")
    assert result.exit_code == 1
    text = " ".join(result.output.split())
    assert needle in text and setup.name in text, text
    assert not out.exists() or not any(out.iterdir())


def test_setup_and_tracks_together_are_refused(tmp_path):
    setup = _scale_setup(tmp_path)
    result = _calibrate(DATA / "subject01_static.trc", "--opensim-setup", setup)
    assert result.exit_code == 1
    assert "give no tracks and no --body-plan" in " ".join(result.output.split())
