"""The run config's ``ik_setup``: one OpenSim IK setup for the archive or one per session,
paths relative to the config file, each setup's task set read when the config loads."""

from __future__ import annotations

import shutil

import pytest

from pipeline.config import load_run_config
from pipeline.errors import ConfigError
from tests.fixtures.shared_data import SHARED

IK = SHARED / "data" / "opensim" / "gait2392" / "subject01_Setup_IK.xml"


def test_one_setup_for_the_archive_and_one_of_a_session(tmp_path):
    (tmp_path / "setups").mkdir()
    shutil.copy(IK, tmp_path / "setups" / "all.xml")
    shutil.copy(IK, tmp_path / "setups" / "walk2.xml")
    path = tmp_path / "run.yaml"
    path.write_text("ik_setup: setups/all.xml\n")
    config = load_run_config(path)
    assert config.ik_setup.for_session("walk1") == str(tmp_path / "setups" / "all.xml")
    path.write_text("ik_setup: {archive: setups/all.xml, sessions: {walk2: setups/walk2.xml}}\n")
    config = load_run_config(path)
    assert config.ik_setup.for_session("walk1") == str(tmp_path / "setups" / "all.xml")
    assert config.ik_setup.for_session("walk2") == str(tmp_path / "setups" / "walk2.xml")
    path.write_text("ik_setup: {sessions: {walk2: setups/walk2.xml}}\n")
    assert load_run_config(path).ik_setup.for_session("walk1") is None
    assert load_run_config(None).ik_setup.for_session("walk1") is None  # default: none


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (("<weight>10</weight>", "<weight>-1</weight>"), r"IKMarkerTask\['R.ASIS'\].weight"),
        (("<apply>true</apply>", "<apply>maybe</apply>"), r"\.apply: 'maybe' is not true"),
        (("InverseKinematicsTool", "ScaleTool"), "not an OpenSim IK setup"),
    ],
)
def test_a_bad_setup_fails_the_config_naming_its_file_and_field(tmp_path, edit, needle):
    bad = tmp_path / "bad_Setup_IK.xml"
    bad.write_text(IK.read_text().replace(*edit))
    path = tmp_path / "run.yaml"
    path.write_text(f"ik_setup: {bad.name}\n")
    with pytest.raises(ConfigError, match=needle) as info:
        load_run_config(path)
    assert "bad_Setup_IK.xml" in str(info.value)
