"""Integration tests (real clusters, Prefect servers, the CLI end to end) are all ``slow``.

``make check`` (and ``pytest -m "not slow"``) leaves them out for a quick edit loop; ``make
test`` and CI run everything. A test here that sets no timeout of its own gets
:data:`TIMEOUT` (end-to-end runs on a loaded 2-core machine) instead of pyproject's 120 s.
"""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
#: Seconds allowed to an integration test that does not set its own timeout.
TIMEOUT = 300


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(item.fspath).resolve().parents:
            item.add_marker(pytest.mark.slow)
            if item.get_closest_marker("timeout") is None:
                item.add_marker(pytest.mark.timeout(TIMEOUT))
