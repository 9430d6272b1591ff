"""Integration tests (real clusters, Prefect servers, the CLI end to end) are all ``slow``.

``make check`` (and ``pytest -m "not slow"``) leaves them out for a quick edit loop; ``make
test`` and CI run everything.
"""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(item.fspath).resolve().parents:
            item.add_marker(pytest.mark.slow)
