"""Bad body plans at the pipeline level: one BodyPlanError, nothing created or changed.

Every BodyPlanError case of the body-plan suite (``tests/bodyplan/test_errors.py``) is
handed to :func:`pipeline.fit.fit_session` and to ``kinefit fit`` with an output folder
that already holds a tracks store and a complete fit: the error names the plan file and
the field, and no byte of the folder changes. Plus version mix-ups and broken files.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import tests.unit.bodyplan.test_errors as _CASES  # noqa: E402 - V1_CASES + V2_CASES, one list
from flows.cli import app
from pipeline.bodyplan import BodyPlanError
from pipeline.fit import fit_session
from tests.fixtures.bodyplan_samples import small_v1, small_v2  # noqa: E402
from tests.fixtures.reliability_helpers import assert_unchanged, snapshot

runner = CliRunner()


@pytest.fixture(scope="module")
def folder(fly, fly_tracks, tmp_path_factory):
    """An output folder with a tracks store and a complete fit, shared by the cases.

    Sharing is safe because every case asserts that it changed nothing.
    """
    from pipeline.solve import SolverConfig
    from pipeline.store import write_tracks

    folder = tmp_path_factory.mktemp("archive")
    write_tracks(fly_tracks, folder / "t.zarr", chunk_frames=20)
    fit_session(folder / "t.zarr", fly, SolverConfig(), folder / "fit.zarr")
    return folder


def _location(path, joint, dof, field):
    where = re.escape(str(path))
    if joint is not None:
        where += re.escape(f": joint #{joint}" if isinstance(joint, int) else f": joint '{joint}'")
    if dof is not None:
        where += f" dof {dof}"
    if field is not None:
        where += re.escape(f": field '{field}'")
    return where


def _write(folder: Path, data) -> Path:
    path = folder / "plan.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


@pytest.mark.parametrize(("base", "mutate", "where", "reason"), _CASES.V1_CASES + _CASES.V2_CASES)
def test_fit_session_refuses_bad_plan(folder, solver, base, mutate, where, reason):
    data = small_v1() if base == "v1" else small_v2()
    mutate(data)
    plan = _write(folder, data)
    before = snapshot(folder)
    with pytest.raises(BodyPlanError, match="^" + _location(plan, *where) + ": " + reason):
        fit_session(folder / "t.zarr", plan, solver, folder / "fit.zarr", force=True)
    assert_unchanged(before, folder)


def _v(version, base=small_v1):
    data = base()
    data["version"] = version
    return data


def _v2_without_version():
    data = small_v2()
    del data["version"]
    return data


# (plan content, field named, message regex, id)
MIXUPS = [
    (_v(2.0), "version", "unknown version number 2.0; known versions: 1, 2", "version-float"),
    (_v(True), "version", "unknown version boolean true", "version-bool"),
    (_v(None), "version", "unknown version null", "version-null"),
    (_v(0), "version", "unknown version number 0", "version-zero"),
    (
        _v(1, small_v2),
        "kind",
        'version-2 field but the file does not declare "version": 2',
        "v2-plan-labelled-v1",
    ),
    (_v2_without_version(), "kind", 'does not declare "version": 2', "v2-plan-unlabelled"),
    ("", None, "not valid JSON: Expecting value at line 1 column 1", "empty-file"),
    ('{"fixed_base": true, "joints": [', None, "not valid JSON", "truncated-file"),
    ("[]", None, "expected an object, got array", "top-level-array"),
]


@pytest.mark.parametrize(
    ("data", "field", "reason"), [m[:3] for m in MIXUPS], ids=[m[3] for m in MIXUPS]
)
def test_version_mixups_and_broken_files(folder, solver, data, field, reason):
    plan = _write(folder, data)
    before = snapshot(folder)
    with pytest.raises(
        BodyPlanError,
        match=re.escape(str(plan))
        + ".*"
        + (re.escape(f"field '{field}'") + ".*" if field else "")
        + reason,
    ):
        fit_session(folder / "t.zarr", plan, solver, folder / "fit.zarr", force=True)
    assert_unchanged(before, folder)


def test_binary_and_missing_plan_files(folder, solver):
    garbage = folder / "plan.json"
    garbage.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe" * 20)
    before = snapshot(folder)
    with pytest.raises(BodyPlanError, match=re.escape(str(garbage)) + ": not UTF-8 text"):
        fit_session(folder / "t.zarr", garbage, solver, folder / "fit.zarr", force=True)
    with pytest.raises(BodyPlanError, match=re.escape(str(folder / "nope.json")) + ": file not"):
        fit_session(folder / "t.zarr", folder / "nope.json", solver, folder / "fit.zarr")
    assert_unchanged(before, folder)


CLI_CASES = [
    c
    for c in _CASES.V1_CASES + _CASES.V2_CASES
    if c.id
    in {
        "unknown-dof-type",
        "cycle",
        "v2-kind-in-v1-file",
        "unknown-version",
        "swing-above-pi",
        "universal-parallel",
    }
]


@pytest.mark.parametrize(("base", "mutate", "where", "reason"), CLI_CASES)
def test_cli_fit_exits_nonzero_with_one_message(folder, base, mutate, where, reason):
    data = small_v1() if base == "v1" else small_v2()
    mutate(data)
    plan = _write(folder, data)
    before = snapshot(folder)
    result = runner.invoke(
        app,
        [
            "fit",
            str(folder / "t.zarr"),
            "-b",
            str(plan),
            "-o",
            str(folder / "fit.zarr"),
            "--workers",
            "0",
            "--force",
        ],
    )
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len([line for line in lines if line.startswith("error:")]) == 1, result.output
    text = " ".join(result.output.split())  # the console may wrap long messages
    assert str(plan) in text and f"field '{where[2]}'" in text
    assert "Traceback" not in result.output
    assert_unchanged(before, folder)
