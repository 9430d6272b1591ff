"""``kinefit body-plan convert|edit|combine|map`` through typer's CliRunner."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import flows.cli.bodyplan_tools  # noqa: F401 (registers the commands)
from flows.cli import app
from pipeline.bodyplan import load_body_plan
from tests.fixtures.shared_data import SHARED

MODELS = SHARED / "data" / "models"
runner = CliRunner()


def test_convert_edit_combine(tmp_path):
    pytest.importorskip("mujoco", reason="needs mujoco: pip install 'kinefit[mjcf]'")
    out = tmp_path / "g1.json"
    result = runner.invoke(
        app,
        [
            "body-plan",
            "convert",
            str(MODELS / "mjcf" / "unitree_g1.nomesh.xml"),
            "-o",
            str(out),
            "--sites",
            "left_foot,right_foot",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "32 joints, 29 DOFs" in result.output
    plan = load_body_plan(out)
    assert "left_foot" in plan.joint_names and plan.extras["x-source"]["format"] == "mjcf"
    edited = tmp_path / "edited.json"
    result = runner.invoke(
        app,
        [
            "body-plan",
            "edit",
            str(out),
            "-o",
            str(edited),
            "--remove",
            "left_foot",
            "--rename",
            "pelvis=hips",
            "--no-limits",
        ],
    )
    assert result.exit_code == 0, result.output
    body = load_body_plan(edited)
    assert body.joint_names[0] == "hips" and "left_foot" not in body.joint_names
    both = tmp_path / "both.json"
    result = runner.invoke(app, ["body-plan", "combine", "mannequin", "mannequin", "-o", str(both)])
    assert result.exit_code == 0, result.output
    assert load_body_plan(both).joint_names[:3] == ("world", "a_position", "a_orientation")


def test_convert_reports_bad_input(tmp_path):
    bad = tmp_path / "cut.urdf"
    bad.write_text("<robot name='r'><link name='a'>")
    result = runner.invoke(app, ["body-plan", "convert", str(bad), "-o", str(tmp_path / "x.json")])
    assert result.exit_code == 1
    assert "not a well-formed URDF XML file" in result.output


def test_map_prints_the_yaml(tmp_path):
    plan = tmp_path / "mouse.json"
    joints = [
        {
            "name": n,
            "parent": None if i == 0 else "nose",
            "offset_pos": [i, 0, 0],
            "offset_quat": [1, 0, 0, 0],
            "dofs": [],
        }
        for i, n in enumerate(["nose", "ear_l", "ear_r", "tail_base"])
    ]
    plan.write_text(json.dumps({"fixed_base": False, "joints": joints}))
    tracks = SHARED / "data" / "realdata" / "dlc" / "CollectedData_Pranav.csv"
    result = runner.invoke(app, ["body-plan", "map", str(tracks), str(plan)])
    assert result.exit_code == 0, result.output
    assert "keypoints:" in result.output
    assert "snout: nose" in result.output and "leftear: ear_l" in result.output
