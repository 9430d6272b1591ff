"""An archive whose run config names OpenSim IK setups (one for the archive, one of a
session's own): the reprocess flow (Prefect test harness, a LocalCluster, zarr stores)
fits with their marker weights and coordinate tasks, held against OpenSim's published IK."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from flows.archive import reprocess_archive
from pipeline.bodyplan import save_body_plan
from pipeline.bodyplan.engine_config import to_engine_configuration
from pipeline.errors import ConfigError
from pipeline.store import open_fit
from pipeline.tracks.opensim_storage import read_storage
from tests.fixtures.flows_samples import run_config
from tests.fixtures.opensim_walk import walk_excerpt
from tests.fixtures.shared_data import SHARED

osim = pytest.importorskip("opensim")
osim.Logger.setLevelString("error")

DATA = SHARED / "data" / "opensim" / "gait2392"
IK = DATA / "subject01_Setup_IK.xml"
PUBLISHED = DATA / "subject01_walk1_ik.mot"
#: OpenSim's objective to a tight tolerance: least squares, no prior, absolute units (the
#: run config's solver section says how to fit; the setups add weights and tasks)
OPENSIM_LIKE = {
    "loss": "l2",
    "neutral_weight": 0.0,
    "length_scale": 1.0,
    "position_tolerance": 1e-9,
    "angle_tolerance": 1e-9,
    "cost_tolerance": 0.0,
    "n_iterations": 200,
    "uncertainty": False,
}


def _held_setup(out: Path, value: float) -> Path:
    """The IK setup with subtalar_angle_r held at ``value`` rad (manual, heavy)."""
    tree = ET.parse(IK)
    for task in tree.getroot().iter("IKCoordinateTask"):
        if task.get("name") == "subtalar_angle_r":
            task.find("value_type").text = "manual_value"
            task.find("value").text = str(value)
            task.find("weight").text = "1000000"
    tree.write(out)
    return out


def _angles(fit_store: Path, plan) -> dict[str, np.ndarray]:
    fit = open_fit(fit_store)
    q = np.asarray(fit["dof_value"].isel(individual=0).values, np.float64)
    return {k: np.asarray(v) for k, v in to_engine_configuration(plan, q).items()}


@pytest.fixture(scope="module")
def gait_plan(tmp_path_factory):
    from pipeline.bodyplan.importers.osim import import_osim

    with pytest.warns(UserWarning):  # mtp has no marker below it
        plan = import_osim(DATA / "subject01_simbody.osim")
    return plan, save_body_plan(plan, tmp_path_factory.mktemp("plan") / "subject01.json")


@pytest.mark.slow
def test_reprocess_fits_with_the_archives_and_a_sessions_own_ik_setup(
    prefect_harness, dask_address, gait_plan, tmp_path
):
    plan, plan_file = gait_plan
    archive = tmp_path / "archive"
    archive.mkdir()
    walk_excerpt(archive / "walk1.trc", 30, 12)  # 0.5-0.7 s
    walk_excerpt(archive / "walk2.trc", 60, 12)
    held = _held_setup(tmp_path / "held_Setup_IK.xml", 0.2)
    config = run_config(
        tmp_path,
        dask_address,
        archive={"patterns": ["*.trc"]},
        body_plan=str(plan_file),
        solver=OPENSIM_LIKE,
        ik_setup={"archive": str(IK), "sessions": {"walk2": str(held)}},
    )
    summary = reprocess_archive(config)
    assert (summary.fitted, summary.failed) == (2, 0), summary

    ref = read_storage(PUBLISHED)
    times = ref["time"].values
    fit1 = open_fit(tmp_path / "fits" / "walk1.zarr")
    rows = [int(np.argmin(np.abs(times - t))) for t in fit1["time"].values]
    mine = _angles(tmp_path / "fits" / "walk1.zarr", plan)
    for c, v in mine.items():
        rot = c not in ("pelvis_tx", "pelvis_ty", "pelvis_tz")
        d = (np.degrees(v) if rot else v) - ref["value"].sel(coordinate=c).values[rows]
        rms = float(np.sqrt(np.mean(d * d)))
        print(f"walk1 {c:18s} RMS {rms:.4f} {'deg' if rot else 'm'}")
        assert rms < (0.05 if rot else 1e-4), c  # the setup's tasks and weights: OpenSim's
    # the archive's setup holds subtalar and mtp at their defaults (0), weight 1000
    assert np.abs(np.degrees(mine["subtalar_angle_l"])).max() < 0.2
    # walk2's own setup holds subtalar_angle_r at 0.2 rad; its other tasks are the archive's
    own = _angles(tmp_path / "fits" / "walk2.zarr", plan)
    np.testing.assert_allclose(own["subtalar_angle_r"], 0.2, atol=1e-3)
    assert np.abs(own["subtalar_angle_l"]).max() < np.radians(0.2)

    again = reprocess_archive(config)
    assert (again.fitted, again.skipped) == (0, 2)  # current: the tasks are in the fingerprint
    _held_setup(held, 0.25)
    third = reprocess_archive(config)
    assert [s.session for s in third.sessions if s.status == "fitted"] == ["walk2"]


def test_a_bad_ik_setup_is_one_config_error_naming_file_and_field(tmp_path, gait_plan):
    bad = tmp_path / "bad_Setup_IK.xml"
    bad.write_text(
        IK.read_text().replace(
            "<value_type>default_value</value_type>", "<value_type>from_file</value_type>", 1
        )
    )
    with pytest.raises(ConfigError, match=r"bad_Setup_IK.xml.*IKCoordinateTask\[.*value_type"):
        run_config(tmp_path, None, ik_setup=str(bad))
    with pytest.raises(ConfigError, match="no such IK setup file"):
        run_config(tmp_path, None, ik_setup={"sessions": {"walk1": str(tmp_path / "none.xml")}})
