"""How the suite is shared between the xdist workers (``tests/fixtures/scheduling.py``)."""

from __future__ import annotations

import os
from pathlib import Path

pytest_plugins = ["pytester"]

MODULE = """
import pytest

@pytest.fixture(scope="module")
def built():
    return 1

@pytest.fixture(scope="session")
def once():
    return 2

def test_a(built):
    pass

def test_b(built, once):
    pass

def test_c(once):
    pass

@pytest.mark.xdist_group("mine")
def test_d(built):
    pass
"""


def _groups(pytester) -> dict[str, list[str]]:
    pytester.makepyfile(test_mod=MODULE)
    items, _ = pytester.inline_genitems("-p", "tests.fixtures.scheduling")
    return {item.name: [m.args[0] for m in item.iter_markers("xdist_group")] for item in items}


def test_tests_sharing_a_module_fixture_stay_on_one_worker(pytester):
    groups = _groups(pytester)
    assert groups["test_a"] == groups["test_b"] == ["module:test_mod.py"]
    assert groups["test_c"] == []  # a session fixture is built once per worker anyway
    assert groups["test_d"] == ["mine"]  # a test's own group is kept


def test_a_group_runs_on_one_worker_under_loadgroup(pytester, monkeypatch):
    """The ``@group`` suffix reaches xdist's scheduler (pytest 9.2 ignores xdist's own)."""
    root = str(Path(__file__).resolve().parents[3])  # the subprocess imports tests.fixtures
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
    )
    monkeypatch.setenv("KINEFIT_TEST_SKIP_WARM", "1")
    pytester.makepyfile(
        test_grouped="""
import os
import pytest

@pytest.mark.xdist_group("together")
@pytest.mark.parametrize("i", range(6))
def test_grouped(i):
    print("WORKER", os.environ["PYTEST_XDIST_WORKER"])

@pytest.mark.parametrize("i", range(6))
def test_free(i):
    pass
"""
    )
    pytester.makeconftest('pytest_plugins = ["tests.fixtures.scheduling"]')
    run = pytester.runpytest_subprocess(
        "-n", "2", "--dist", "loadgroup", "-v", "-p", "no:cacheprovider"
    )  # fmt: skip
    run.assert_outcomes(passed=12)
    grouped = [
        line.split("]")[0] for line in run.outlines if "PASSED" in line and "@together" in line
    ]
    assert len(grouped) == 6 and len(set(grouped)) == 1, run.outlines
