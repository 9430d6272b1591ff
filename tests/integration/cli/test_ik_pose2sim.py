"""``kinefit ik`` on Pose2Sim's own IK setup and scaled model, held against OpenSim's
InverseKinematicsTool run on the same setup in the same test, and against the ``.mot``
Pose2Sim published."""

from __future__ import annotations

import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from flows.cli import app
from pipeline.bodyplan.engine_config import from_engine_configuration
from pipeline.bodyplan.importers.osim import import_osim
from pipeline.kinematics import forward_kinematics
from pipeline.tracks.opensim_storage import read_storage
from pipeline.tracks.readers import trc
from tests.fixtures.shared_data import SHARED

osim = pytest.importorskip("opensim")
osim.Logger.setLevelString("error")
pytestmark = pytest.mark.slow

DATA = SHARED / "data" / "pose2sim"
SETUP = DATA / "opensim" / "IK_Setup_Pose2Sim_Body25b.xml"
MODEL = DATA / "opensim" / "Model_Pose2Sim_body25b_scaled.osim"
TRC = DATA / "pose-3d" / "S00_P00_T01_BalancingTrial_0-100_filt_butterworth.trc"
MOT = DATA / "opensim" / "S00_P00_T01_BalancingTrial_filt_butterworth_0-100_body25b.mot"
#: Frames fitted (of 100): kinefit's IK solves them one after another, as OpenSim does
FRAMES = 2


def _setup(tmp: Path, **paths: Path) -> Path:
    """Pose2Sim's setup with a short time range (and ``paths`` put in its file fields)."""
    tree = ET.parse(SETUP)
    tool = tree.getroot().find("InverseKinematicsTool")
    tool.find("time_range").text = f"{1 / 60} {FRAMES / 60}"
    for tag, value in paths.items():
        tool.find(tag).text = str(value)
    out = tmp / SETUP.name
    tree.write(out)
    return out


def _rms(mine: Path, ref: Path, rows: slice) -> dict[str, float]:
    a, b = read_storage(mine), read_storage(ref)
    out = {}
    for c in [str(c) for c in b["coordinate"].values]:
        d = a["value"].sel(coordinate=c).values - b["value"].sel(coordinate=c).values[rows]
        d = (d + 180) % 360 - 180 if a.attrs.get("in_degrees") else d  # unclamped branches
        out[c] = float(np.sqrt(np.mean(d * d)))
    return out


def _objective(motion: Path, weights: dict[str, float]) -> np.ndarray:
    """The marker objective of ``motion``'s coordinates (m^2), by kinefit's exact FK."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = import_osim(MODEL)
    table = read_storage(motion)
    model = osim.Model(str(MODEL))
    rotational = {c.getName(): c.getMotionType() == 1 for c in model.getCoordinateSet()}
    names = [str(c) for c in table["coordinate"].values]
    markers = trc.read(TRC)["position"].isel(individual=0)
    out = []
    for t in range(table.sizes["time"]):
        values = {
            n: float(np.radians(v) if rotational[n] else v)
            for n, v in zip(names, table["value"].isel(time=t).values, strict=True)
        }
        pos = forward_kinematics(plan, from_engine_configuration(plan, values).dof_values)
        total = 0.0
        for name, w in weights.items():
            target = markers.sel(keypoint=name).isel(time=t).values
            total += w * float(np.sum((pos[plan.joint_index(name)] - target) ** 2))
        out.append(total)
    return np.array(out)


def test_pose2sims_ik_setup_fitted_as_opensim_fits_it(tmp_path: Path) -> None:
    setup = _setup(tmp_path)  # its model_file and marker_file name a Pose2Sim project
    run = CliRunner().invoke(
        app, ["ik", str(setup), "--model", str(MODEL), "--markers", str(TRC), "-o", str(tmp_path)]
    )
    assert run.exit_code == 0, run.output
    mine = tmp_path / MOT.name
    ref_dir = tmp_path / "opensim"
    ref_dir.mkdir()
    theirs = ref_dir / "opensim.mot"
    tool = osim.InverseKinematicsTool(
        str(_setup(ref_dir, model_file=MODEL, marker_file=TRC, output_motion_file=theirs))
    )
    tool.setResultsDir(str(ref_dir))
    assert tool.run()
    weights = {
        node.get("name"): float(node.find("weight").text)
        for node in ET.parse(SETUP).getroot().iter("IKMarkerTask")
    }
    # kinefit reaches OpenSim's objective or lower on every frame
    assert np.all(_objective(mine, weights) <= _objective(theirs, weights) * (1 + 1e-3))
    rms = _rms(mine, theirs, slice(None))
    # measured on all 100 frames: median 0.18 deg, worst Abs_r3 3.2 deg, pelvis_list and
    # hip flexion 2.0-2.2: directions the markers barely constrain, where OpenSim stops at
    # its accuracy above the objective kinefit reaches (0.02114 vs 0.02135 m^2, frame 0)
    assert np.median(list(rms.values())) < 0.5, rms
    assert max(rms.values()) < 5.0, sorted(rms.items(), key=lambda kv: kv[1])[-5:]


@pytest.mark.xfail(
    strict=True,
    reason="the published .mot is not OpenSim's IK of the shipped .trc and scaled model: "
    "OpenSim 4.6 itself, on the same setup and files, misses it by 12.5 deg RMS "
    "(neck_flexion, a constant -12 deg offset; knee_angle_r +3.9) and its marker "
    "objective there is 1.5x OpenSim's own optimum",
)
def test_opensims_own_ik_reproduces_pose2sims_published_mot(tmp_path: Path) -> None:
    out = tmp_path / "opensim.mot"
    tool = osim.InverseKinematicsTool(
        str(_setup(tmp_path, model_file=MODEL, marker_file=TRC, output_motion_file=out))
    )
    tool.setResultsDir(str(tmp_path))
    assert tool.run()
    rms = _rms(out, MOT, slice(0, FRAMES))
    assert max(rms.values()) < 0.5, sorted(rms.items(), key=lambda kv: kv[1])[-5:]
