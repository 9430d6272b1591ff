"""Progress of an archive run, for whoever is watching (the CLI's progress bars).

The flows call :func:`advance` as sessions finish; a caller that wants to show progress
installs a hook with :func:`progress_hook` around the flow call. The hook lives in a
context variable (not module state): nothing happens when no hook is installed, as in a
deployment's run, whose progress is in its Prefect logs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

Hook = Callable[[str, int, int], None]
_hook: ContextVar[Hook | None] = ContextVar("kinefit_progress_hook", default=None)


@contextmanager
def progress_hook(hook: Hook) -> Iterator[None]:
    """Call ``hook(stage, done, total)`` on progress within this block."""
    token = _hook.set(hook)
    try:
        yield
    finally:
        _hook.reset(token)


def advance(stage: str, done: int, total: int) -> None:
    """Report that ``done`` of ``total`` sessions of ``stage`` (ingest, fit) are finished."""
    hook = _hook.get()
    if hook is not None:
        hook(stage, done, total)
