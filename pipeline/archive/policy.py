"""The archive run's rules: what a retry can cure, and when the report is stale.

Kept here rather than in the flows, so the rules are tested without an orchestrator and
the flows stay a few lines around them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pipeline.store.atomic import PERMANENT_ERRNOS

__all__ = ["is_transient", "report_is_stale"]

#: Exceptions never worth a retry (bad paths); OSErrors with PERMANENT_ERRNOS neither.
_PERMANENT = (FileNotFoundError, FileExistsError, PermissionError, IsADirectoryError)
#: Dask's errors of a lost worker or connection (by name: distributed is not imported here).
_LOST = ("KilledWorker", "CommClosedError")


def is_transient(exc: BaseException | None) -> bool:
    """True for errors a retry may cure: network/I-O trouble or a lost dask worker.

    The error's ``__cause__`` chain is followed, so a ``FitError`` raised from a lost
    worker counts as transient. A read-only or full output folder, a missing file or a
    refused permission does not heal by waiting.
    """
    while exc is not None:
        if isinstance(exc, TimeoutError | ConnectionError) or type(exc).__name__ in _LOST:
            return True
        if isinstance(exc, OSError) and not isinstance(exc, _PERMANENT):
            return exc.errno not in PERMANENT_ERRNOS
        exc = exc.__cause__
    return False


def report_is_stale(fitted: Sequence[object], report: str | Path) -> bool:
    """Whether the archive report must be rewritten: something was fitted, or it is missing."""
    return bool(fitted) or not Path(report).exists()
