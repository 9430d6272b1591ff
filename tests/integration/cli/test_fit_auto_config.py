"""``body_plan: auto`` in a run config: ``kinefit fit --config`` chooses the session's plan.

The choice is the one ``-b auto`` makes (:mod:`pipeline.fit.plan_choice`), recorded in the
fit store (``body_plan_choice``) and its fingerprint, so a rerun of the unchanged session
is up to date; a session no plan matches is one error naming its tracks and the best
candidates, and nothing is written.
"""

from __future__ import annotations

import json

import yaml
from typer.testing import CliRunner

from flows.cli import app
from pipeline.store.attrs import store_attrs
from tests.fixtures.shared_data import SHARED

REAL = SHARED / "data" / "realdata"
runner = CliRunner()


def _config(tmp_path, **settings):
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({"body_plan": "auto", "cluster": {"n_workers": 0}, **settings}))
    return path


def _ingest(tmp_path, rel, *extra):
    out = tmp_path / "tracks.zarr"
    result = runner.invoke(app, ["ingest", str(REAL / rel), "-o", str(out), *extra])
    assert result.exit_code == 0, result.output
    return out


def test_config_auto_chooses_records_and_is_stable_on_a_rerun(tmp_path):
    tracks = _ingest(tmp_path, "dlc/mouse_multi.csv", "--frames", "0:12", "--fps", "30")
    fit = ["fit", str(tracks), "-o", str(tmp_path / "f.zarr"), "--config", str(_config(tmp_path))]
    first = runner.invoke(app, fit)
    assert first.exit_code == 0, first.output
    assert "body plan mouse_topdown chosen by keypoint names: 12 of 12" in first.output
    attrs = store_attrs(tmp_path / "f.zarr")
    choice = attrs["body_plan_choice"]
    assert choice["setting"] == "auto" and choice["plan"] == "mouse_topdown"
    assert (choice["mapped"], choice["keypoints"], choice["own_skeleton"]) == (12, 12, False)
    assert json.loads(attrs["body_plan"])["x-name"] == "mouse_topdown"
    assert ["snout", "nose"] in attrs["keypoint_map"]
    again = runner.invoke(app, fit)
    assert again.exit_code == 0, again.output
    assert "up to date" in again.output and attrs["fingerprint"][:12] in again.output


def test_config_auto_on_a_weak_map_is_one_error_naming_the_session(tmp_path):
    tracks = _ingest(tmp_path, "c3d/Vicon.c3d", "--frames", "0:5")
    out = tmp_path / "f.zarr"
    fit = ["fit", str(tracks), "-o", str(out), "--config", str(_config(tmp_path))]
    result = runner.invoke(app, fit)
    assert result.exit_code == 1
    text = " ".join(result.output.split())
    assert text.count("error:") == 1
    assert f"{tracks}: no body plan matches" in text and "best candidates: " in text
    assert "body_plan in the run config" in text and not out.exists()


def test_config_auto_refuses_an_archive_calibration_stage(tmp_path):
    tracks = _ingest(tmp_path, "dlc/mouse_multi.csv", "--frames", "0:5", "--fps", "30")
    config = _config(tmp_path, calibration={"mode": "per_session"})
    fit = ["fit", str(tracks), "-o", str(tmp_path / "f.zarr"), "--config", str(config)]
    result = runner.invoke(app, fit)
    assert result.exit_code == 1
    assert "calibration.mode 'per_session' with body_plan 'auto'" in result.output
    assert str(config) in " ".join(result.output.split())
