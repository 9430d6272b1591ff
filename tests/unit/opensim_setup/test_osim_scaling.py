"""The model scaled on its XML (:mod:`pipeline.opensim_setup.osim_scaling`) against OpenSim's
own ``Model::scale`` of the same model with the same factors: bodies, markers, muscle paths
and mass properties at random poses across the coordinates' ranges."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from pipeline.opensim_setup import osim_scaling
from tests.fixtures.shared_data import SHARED

osim = pytest.importorskip("opensim")
osim.Logger.setLevelString("error")

GENERIC = SHARED / "data" / "models" / "osim" / "gait2392_thelen2003muscle.osim"
MARKERS = SHARED / "data" / "opensim" / "gait2392" / "gait2392_Scale_MarkerSet.xml"


def _state(model_file, fractions):
    """Positions (m) of every body and marker and every muscle's path length at a pose."""
    model = osim.Model(str(model_file))
    state = model.initSystem()
    cs = model.getCoordinateSet()
    for i in range(cs.getSize()):
        c = cs.get(i)
        lo, hi = c.getRangeMin(), c.getRangeMax()
        c.setValue(state, lo + (hi - lo) * fractions[i], False)
    model.realizePosition(state)
    out = {}
    for m in model.getMarkerSet():
        p = m.getLocationInGround(state)
        out[m.getName()] = np.array([p.get(i) for i in range(3)])
    for b in model.getBodySet():
        p = b.getPositionInGround(state)
        out[b.getName()] = np.array([p.get(i) for i in range(3)])
    lengths = {
        m.getName(): osim.PathActuator.safeDownCast(m).getGeometryPath().getLength(state)
        for m in model.getMuscles()
    }
    mass = {}
    for b in model.getBodySet():
        moments = b.getInertia().getMoments()
        mass[b.getName()] = np.array([b.getMass(), *(moments.get(i) for i in range(3))])
    return out, lengths, mass


@pytest.mark.parametrize("preserve", [False, True])
def test_scaled_xml_matches_opensims_model_scale(tmp_path, preserve):
    rng = np.random.default_rng(11)
    root = ET.parse(GENERIC).getroot()
    osim_scaling.add_markers(root, MARKERS)
    generic = tmp_path / "generic.osim"
    generic.write_text(osim_scaling.model_text(root))
    bodies = [b.get("name") for b in root.iter("Body")]
    factors = {b: rng.uniform(0.8, 1.25, 3) for b in bodies}  # unequal axes: the hard case
    factors["torso"] = np.full(3, 1.1)  # and a uniform one
    osim_scaling.scale_model(root, factors, preserve_mass_distribution=preserve, subject_mass=70.0)
    mine = tmp_path / "mine.osim"
    mine.write_text(osim_scaling.model_text(root, "scaled"))

    model = osim.Model(str(generic))
    state = model.initSystem()
    scale_set = osim.ScaleSet()
    for body, f in factors.items():
        scale = osim.Scale()
        scale.setSegmentName(body)
        scale.setScaleFactors(osim.Vec3(*f))
        scale.setApply(True)
        scale_set.cloneAndAppend(scale)
    model.scale(state, scale_set, preserve, 70.0)
    theirs = tmp_path / "theirs.osim"
    model.printToXML(str(theirs))

    for _ in range(3):
        pose = rng.uniform(0, 1, 30)
        (a, la, ma), (b, lb, mb) = _state(mine, pose), _state(theirs, pose)
        assert set(a) == set(b) and len(a) == 39 + 12
        for name in b:
            np.testing.assert_allclose(a[name], b[name], atol=1e-12, err_msg=name)
        for name in lb:  # the path points (fixed, conditional and moving) scaled alike
            assert la[name] == pytest.approx(lb[name], abs=1e-12), name
    for name in mb:
        np.testing.assert_allclose(ma[name], mb[name], rtol=1e-12, err_msg=name)
    assert sum(m[0] for m in ma.values()) == pytest.approx(70.0)


def test_rajagopal_bodies_and_markers_match_opensims_model_scale(tmp_path):
    """A full-body model with patella couplers and offset frames; its muscles wrap over
    objects this module does not scale, so only the kinematics and masses are compared."""
    rng = np.random.default_rng(5)
    root = ET.parse(GENERIC.parent / "Rajagopal2016.osim").getroot()
    generic = tmp_path / "generic.osim"
    generic.write_text(osim_scaling.model_text(root))
    factors = {b.get("name"): rng.uniform(0.8, 1.25, 3) for b in root.iter("Body")}
    osim_scaling.scale_model(root, factors, preserve_mass_distribution=True, subject_mass=None)
    mine = tmp_path / "mine.osim"
    mine.write_text(osim_scaling.model_text(root))
    model = osim.Model(str(generic))
    state = model.initSystem()
    scale_set = osim.ScaleSet()
    for body, f in factors.items():
        scale = osim.Scale()
        scale.setSegmentName(body)
        scale.setScaleFactors(osim.Vec3(*f))
        scale.setApply(True)
        scale_set.cloneAndAppend(scale)
    model.scale(state, scale_set, True, -1.0)
    theirs = tmp_path / "theirs.osim"
    model.printToXML(str(theirs))
    pose = rng.uniform(0.2, 0.8, 60)
    (a, _, ma), (b, _, mb) = _state(mine, pose), _state(theirs, pose)
    assert set(a) == set(b) and len(a) > 80
    for name in b:
        np.testing.assert_allclose(a[name], b[name], atol=1e-12, err_msg=name)
    for name in mb:
        np.testing.assert_allclose(ma[name], mb[name], rtol=1e-12, err_msg=name)
