"""What every ``kinefit`` command shares: the error guard and option helpers.

What the commands print is in :mod:`flows.cli.output`.

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

from flows.cli.output import WarningLines, err_console, error
from flows.logs import quiet_opensim
from pipeline.errors import KinefitError, user_interface

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
UpAxisOption = Annotated[
    str | None,
    typer.Option(
        "--up-axis",
        help="The tracks' up axis (x, y, z, -x, -y, -z) where the file does not say it or "
        "says it wrongly (with --views: the calibration's world); the fit turns the world "
        "into the body plan's frame.",
    ),
]


#: Exit statuses: a user error (bad input, a failed fit), an internal error (a bug), Ctrl-C.
EXIT_USER, EXIT_INTERNAL, EXIT_INTERRUPTED = 1, 2, 130
#: What a user can fix: kinefit's own errors, the filesystem's, and bad command-line values.
#: (typer raises its own copy of click's exceptions: ``typer.BadParameter``.)
USER_ERRORS: tuple[type[BaseException], ...] = (
    KinefitError,
    OSError,
    click.ClickException,
    typer.TyperException,
)


@contextmanager
def guard(verbose: bool) -> Iterator[None]:
    """Report an exception as one line and exit; show the warnings raised meanwhile.

    A :class:`~pipeline.errors.KinefitError`, an ``OSError`` or a bad option value is the
    user's to fix: its message, exit status 1. Ctrl-C (or a ``SystemExit`` that a library's
    signal handler raises instead, or any error raised after the signal arrived, such as
    the local Prefect server's connection going down with it) exits 130. Anything else is
    a bug in kinefit: one line saying so and how to see the traceback (``--verbose``),
    exit status 2. Unless ``verbose``, OpenSim's logger is off (:func:`quiet_opensim`).
    """
    _was_interrupted(clear=True)
    quiet_opensim(verbose)
    show = WarningLines().show_all  # a signal of an earlier command in this process
    with user_interface("cli"), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        except typer.Exit:
            show(caught)
            raise
        except (KeyboardInterrupt, SystemExit) as exc:
            show(caught)
            if isinstance(exc, SystemExit) and isinstance(exc.code, int) and exc.code:
                raise
            error("interrupted; finished work is kept, rerun to resume")
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except Exception as exc:  # noqa: BLE001 - one report for all
            show(caught)
            if verbose:
                err_console.print_exception()
            if _was_interrupted():  # the fallout of Ctrl-C (the local server went down first)
                error("interrupted; finished work is kept, rerun to resume")
                raise typer.Exit(EXIT_INTERRUPTED) from None
            if isinstance(exc, USER_ERRORS):
                error(_message(exc))
                raise typer.Exit(EXIT_USER) from None
            error(
                f"internal error ({type(exc).__name__}: {exc}); this is a bug in kinefit"
                + ("" if verbose else ": rerun with --verbose for the traceback and report it")
            )
            raise typer.Exit(EXIT_INTERNAL) from None
    show(caught)


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


def _message(exc: BaseException) -> str:
    """A user error's one line; a bad option value names the option (click's wording)."""
    format_message = getattr(exc, "format_message", None)
    if isinstance(exc, click.ClickException | typer.TyperException) and format_message:
        return format_message()
    return str(exc) or type(exc).__name__


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


def load_plan(spec: str) -> Any:
    """A body plan from a JSON file, or the built-in ``mannequin``."""
    from pipeline.bodyplan import resolve_body_plan

    return resolve_body_plan(spec)


def parse_options(pairs: Sequence[str] | None) -> dict[str, Any]:
    """``-O unit=mm -O n_frames=100`` -> ``{"unit": "mm", "n_frames": 100}`` (YAML values)."""
    from pipeline.config.config_files import yaml_value
    from pipeline.config.pairs import parse_pairs

    return parse_pairs(pairs, "--option", yaml_value, key="identifier")


def cluster_override(workers: int | None, scheduler: str | None) -> dict[str, Any] | None:
    """The ``cluster`` settings that ``--workers`` / ``--scheduler`` ask for, if any."""
    if scheduler and workers is not None:
        raise typer.BadParameter("pass either --workers or --scheduler, not both")
    if scheduler:
        return {"mode": "address", "address": scheduler}
    if workers is not None:
        return {"mode": "local", "n_workers": workers}
    return None
