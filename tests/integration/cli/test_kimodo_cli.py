"""`kinefit export kimodo`, through the real CLI app."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from flows.cli import app as kinefit_app
from pipeline.bodyplan import mannequin
from pipeline.export.kimodo import load_constraints
from pipeline.tracks import read_tracks
from tests.fixtures.kimodo_motion import fit_store, upright_tracks
from tests.fixtures.shared_data import KIMODO

SKELETONS = KIMODO / "skeletons.json"


@pytest.fixture(scope="module")
def app():
    return kinefit_app


@pytest.fixture(scope="module")
def fit(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli")
    tracks = upright_tracks(mannequin(), 40, 30.0, np.random.default_rng(2), up_axis="z")
    return fit_store(mannequin(), tracks, folder)


def test_export_command_writes_constraints_and_meta(app, fit, tmp_path):
    out = tmp_path / "walk" / "constraints.json"
    out.parent.mkdir()
    args = ["export", "kimodo", str(fit), "--skeleton-file", str(SKELETONS)]
    args += ["--skeleton", "somaskel30", "--out", str(out), "--name-map", "mannequin"]
    args += ["--fullbody", "every:20", "--left-hand", "5,25", "--end-effector", "10"]
    args += ["--end-effector-joints", "Hips,LeftFoot", "--root2d", "waypoints", "--no-heading"]
    args += ["--text", "a person walks"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "wrote" in result.output and "40 frames at 30 fps on somaskel30" in result.output
    meta = json.loads((out.parent / "meta.json").read_text())
    assert meta["text"] == "a person walks" and int(meta["duration"] * 30) == 40
    constraints = load_constraints(out, SKELETONS, "somaskel30")
    assert [e.type for e in constraints.entries] == [
        "root2d",
        "fullbody",
        "left-hand",
        "end-effector",
    ]
    assert constraints.entries[0].heading is None
    assert constraints.entries[0].frames.tolist() == [0, 30, 39]
    ds = read_tracks(out, format="kimodo", skeleton_file=SKELETONS, skeleton="somaskel30")
    assert ds.sizes["time"] == 40


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--skeleton", "soma"], "unknown skeleton 'soma'; skeletons in the file"),
        (["--floor", "ground"], "--floor: expected 'lowest' or a number, got 'ground'"),
        (["--fullbody", "1;2"], "--fullbody: '1;2' is neither frame numbers"),
        (["--name-map", "robot"], "robot: no such name-map file, and not a built-in table"),
        ([], "the fitted body plan's joints are not the Kimodo skeleton"),
    ],
)
def test_export_command_errors_exit_1_with_one_message(app, fit, tmp_path, extra, message):
    args = ["export", "kimodo", str(fit), "--skeleton-file", str(SKELETONS)]
    args += ["--out", str(tmp_path / "c.json")]
    if extra and extra[0] != "--name-map":
        args += ["--name-map", "mannequin"]
    result = CliRunner().invoke(app, args + extra)
    assert result.exit_code == 1
    assert message in " ".join(result.output.split())
    assert not (tmp_path / "c.json").exists()
