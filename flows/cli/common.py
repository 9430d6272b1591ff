"""What every ``kinefit`` command shares: consoles, the error guard, option helpers.

Imports nothing heavy (no numpy, no prefect), so ``kinefit --help`` stays fast.
"""

from __future__ import annotations

import shlex
import shutil
import sys
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import click
import typer
from rich.console import Console
from rich.markup import escape

from pipeline.errors import KinefitError

console = Console(stderr=False)
err_console = Console(stderr=True)

Verbose = Annotated[
    bool,
    typer.Option("--verbose", "-v", help="Show tracebacks on errors, and Prefect's/Dask's logs."),
]
ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config", "-c", help="Run config YAML (see: kinefit config show).", exists=False
    ),
]
SetOption = Annotated[
    list[str] | None,
    typer.Option("--set", "-s", help="Override a config value: key.path=value (repeatable)."),
]


#: zarr's warning when kinefit writes consolidated metadata (the store module silences it,
#: but zarr raises it on its own I/O thread, where another thread's warning filters may rule).
CONSOLIDATED_WARNING = "Consolidated metadata is currently not part in the Zarr format 3"
#: Exit statuses: a user error (bad input, a failed fit), an internal error (a bug), Ctrl-C.
EXIT_USER, EXIT_INTERNAL, EXIT_INTERRUPTED = 1, 2, 130
#: What a user can fix: kinefit's own errors, the filesystem's, and bad command-line values.
USER_ERRORS: tuple[type[BaseException], ...] = (KinefitError, OSError, click.ClickException)


@contextmanager
def guard(verbose: bool) -> Iterator[None]:
    """Report an exception as one line and exit; show the warnings raised meanwhile.

    A :class:`~pipeline.errors.KinefitError`, an ``OSError`` or a bad option value is the
    user's to fix: its message, exit status 1. Ctrl-C (or a ``SystemExit`` that a library's
    signal handler raises instead, or any error raised after the signal arrived, such as
    the local Prefect server's connection going down with it) exits 130. Anything else is
    a bug in kinefit: one line saying so and how to see the traceback (``--verbose``),
    exit status 2.
    """
    _was_interrupted(clear=True)  # a signal of an earlier command in this process
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        except typer.Exit:
            _show_warnings(caught)
            raise
        except (KeyboardInterrupt, SystemExit) as exc:
            _show_warnings(caught)
            if isinstance(exc, SystemExit) and isinstance(exc.code, int) and exc.code:
                raise
            error("interrupted; finished work is kept, rerun to resume")
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except Exception as exc:  # noqa: BLE001 - one report for all
            _show_warnings(caught)
            if verbose:
                err_console.print_exception()
            if _was_interrupted():  # the fallout of Ctrl-C (the local server went down first)
                error("interrupted; finished work is kept, rerun to resume")
                raise typer.Exit(EXIT_INTERRUPTED) from None
            if isinstance(exc, USER_ERRORS):
                error(str(exc) or type(exc).__name__)
                raise typer.Exit(EXIT_USER) from None
            error(
                f"internal error ({type(exc).__name__}: {exc}); this is a bug in kinefit"
                + ("" if verbose else ": rerun with --verbose for the traceback and report it")
            )
            raise typer.Exit(EXIT_INTERNAL) from None
    _show_warnings(caught)


def _was_interrupted(clear: bool = False) -> bool:
    """Ctrl-C or SIGTERM arrived (:func:`~flows.cli.cluster.interruptible`) in this run.

    Without importing the cluster module (and distributed) when nothing loaded it yet.
    """
    client = sys.modules.get("pipeline.cluster.client")
    if client is None:
        return False
    if clear:
        client.clear_interrupt()
    return client.interrupted()


def error(text: str) -> None:
    """Print ``error: text`` on stderr; the text is shown as is (no rich markup)."""
    err_console.print(f"[bold red]error:[/] {escape(text)}", highlight=False, soft_wrap=True)


def _show_warnings(caught: list[warnings.WarningMessage]) -> None:
    seen = set()
    for w in caught:
        text = str(w.message)
        if text.startswith(CONSOLIDATED_WARNING):  # zarr's, raised on a thread of its own
            continue
        if text not in seen and not issubclass(w.category, DeprecationWarning | FutureWarning):
            seen.add(text)
            err_console.print(
                f"[yellow]warning:[/] {escape(text)}", highlight=False, soft_wrap=True
            )


def shell_command(name: str) -> str:
    """How to run ``kinefit`` or ``python`` of this installation from a fresh shell.

    The bare name when the shell would find this very program on its PATH, else the
    program's absolute path (``.venv/bin/kinefit`` when the virtual environment is not
    activated).
    """
    own = Path(sys.executable).with_name(name)
    if not own.exists():
        own = Path(sys.executable)
    found = shutil.which(name)
    if found and Path(found).resolve() == own.resolve():
        return name
    return shlex.quote(str(own))


def q(value: object) -> str:
    """``value`` as text that rich prints as is: user paths and messages keep their [brackets]."""
    return escape(str(value))


def say(text: str) -> None:
    """Print one line of rich markup without highlighting or wrapping."""
    console.print(text, highlight=False, soft_wrap=True)


def load_plan(spec: str) -> Any:
    """A body plan from a JSON file, or the built-in ``mannequin``."""
    from pipeline.bodyplan import resolve_body_plan

    return resolve_body_plan(spec)


def parse_options(pairs: Sequence[str] | None) -> dict[str, Any]:
    """``["unit=mm", "n_frames=100"]`` -> ``{"unit": "mm", "n_frames": 100}`` (YAML values)."""
    from pipeline.config.files import safe_load

    options: dict[str, Any] = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key.strip().isidentifier():
            raise typer.BadParameter(f"expected key=value, got {pair!r}", param_hint="--option")
        options[key.strip()] = safe_load(value) if value.strip() else None
    return options


def cluster_override(workers: int | None, scheduler: str | None) -> dict[str, Any] | None:
    """The ``cluster`` settings that ``--workers`` / ``--scheduler`` ask for, if any."""
    if scheduler and workers is not None:
        raise typer.BadParameter("pass either --workers or --scheduler, not both")
    if scheduler:
        return {"mode": "address", "address": scheduler}
    if workers is not None:
        return {"mode": "local", "n_workers": workers}
    return None


def quiet_dask_logs() -> None:
    """Keep distributed's INFO chatter (scheduler/nanny start-up) out of the console."""
    import logging

    for name in ("distributed", "distributed.scheduler", "distributed.nanny", "distributed.core"):
        logging.getLogger(name).setLevel(logging.WARNING)
