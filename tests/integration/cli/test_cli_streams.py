"""Clean streams: standard output holds what the command prints, the current folder nothing.

Run as a user runs it (``python -m flows.cli`` in a subprocess, standard output
redirected to a file): OpenSim's console lines ("[info] Set log level to Info.") went to
standard output, so ``kinefit body-plan map T model.osim > map.yaml`` wrote invalid YAML,
and OpenSim's file sink wrote ``opensim.log`` into the current folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.fixtures.shared_data import SHARED

ROOT = Path(__file__).resolve().parents[3]
ARM26 = SHARED / "data" / "opensim" / "arm26" / "arm26.osim"
# its three markers are arm26.osim's: a map that passes the weak-map check
TRC = SHARED / "data" / "opensim" / "arm26" / "arm26_elbow_flex.trc"

pytest.importorskip("opensim", reason="needs opensim: pip install 'kinefit[osim]'")


def _kinefit(args: list[str], cwd: Path, stdout_file: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with open(stdout_file, "wb") as out:
        return subprocess.run(
            [sys.executable, "-m", "flows.cli", *args],
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=subprocess.PIPE,
            timeout=300,
            check=False,
        )


def test_body_plan_map_redirected_is_yaml_and_leaves_no_opensim_log(tmp_path):
    redirected = tmp_path / "map.yaml"
    done = _kinefit(["body-plan", "map", str(TRC), str(ARM26)], tmp_path, redirected)
    assert done.returncode == 0, done.stderr.decode()
    text = redirected.read_text()
    assert "[info]" not in text and text.endswith("\n")
    data = yaml.safe_load(text)
    assert set(data) == {"keypoints"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["map.yaml"]  # no opensim.log
    assert b"Set log level" not in done.stderr


def test_body_plan_map_to_a_file_ends_in_a_newline_and_prints_nothing_else(tmp_path):
    written = tmp_path / "out" / "map.yaml"
    written.parent.mkdir()
    stdout = tmp_path / "stdout.txt"
    done = _kinefit(
        ["body-plan", "map", str(TRC), str(ARM26), "-o", str(written)], tmp_path, stdout
    )
    assert done.returncode == 0, done.stderr.decode()
    text = written.read_text()
    assert text.endswith("\n") and not text.endswith("\n\n")
    assert yaml.safe_load(text) == yaml.safe_load(
        subprocess.run(
            [sys.executable, "-m", "flows.cli", "body-plan", "map", str(TRC), str(ARM26)],
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            check=True,
            timeout=300,
        ).stdout
    )
    assert stdout.read_text().startswith("wrote ") and "[info]" not in stdout.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "stdout.txt"]


def test_verbose_leaves_opensims_logger_as_it_is(tmp_path):
    redirected = tmp_path / "map.yaml"
    done = _kinefit(["body-plan", "show", str(ARM26), "--verbose"], tmp_path, redirected)
    assert done.returncode == 0, done.stderr.decode()
    assert (tmp_path / "opensim.log").is_file()  # OpenSim's own default, with --verbose


def test_written_plans_and_maps_take_the_users_umask(tmp_path):
    """``body-plan convert`` and ``calibrate`` plans were 0600 while every other output was
    0644: every file kinefit writes is created with the user's umask."""
    plan, mapping = tmp_path / "arm26.json", tmp_path / "map.yaml"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for args in (
        ["body-plan", "convert", str(ARM26), "-o", str(plan)],
        ["body-plan", "map", str(TRC), str(ARM26), "-o", str(mapping)],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "flows.cli", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            timeout=300,
            check=False,
            preexec_fn=lambda: os.umask(0o027),
        )
        assert done.returncode == 0, done.stderr.decode()
    for written in (plan, mapping):
        assert written.stat().st_mode & 0o777 == 0o640, written
