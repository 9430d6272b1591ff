"""Progress of an archive run, for whoever is watching (the CLI's progress bars).

The flows call :func:`advance` as sessions finish; a caller that wants to show progress
installs a hook with :func:`progress_hook` around the flow call. The hook lives in a
context variable (not module state), so concurrent runs in one process each have their
own. A process that runs exactly one flow and does not call it itself (a served
deployment's run, which Prefect's runner starts in a process of its own) installs a
fallback for the whole process with :func:`set_process_hook`. With neither, nothing
happens: the progress is in the run's Prefect logs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

Hook = Callable[[str, int, int], None]
_hook: ContextVar[Hook | None] = ContextVar("kinefit_progress_hook", default=None)
_process_hook: list[Hook] = []  # at most one: set_process_hook's


@contextmanager
def progress_hook(hook: Hook) -> Iterator[None]:
    """Call ``hook(stage, done, total)`` on progress within this block."""
    token = _hook.set(hook)
    try:
        yield
    finally:
        _hook.reset(token)


def set_process_hook(hook: Hook | None) -> None:
    """Call ``hook(stage, done, total)`` on progress anywhere in this process (None: stop).

    The fallback for progress reported where no :func:`progress_hook` is installed; it
    reaches the flow's body from a Prefect hook, which runs outside that body's context.
    """
    _process_hook.clear()
    if hook is not None:
        _process_hook.append(hook)


def advance(stage: str, done: int, total: int) -> None:
    """Report that ``done`` of ``total`` sessions of ``stage`` (ingest, fit) are finished."""
    hook = _hook.get() or next(iter(_process_hook), None)
    if hook is not None:
        hook(stage, done, total)
