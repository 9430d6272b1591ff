"""The root command group of ``kinefit``: a malformed command line is one line, exit 1.

click reports what it cannot parse (an unknown command or option, a value that is not
an integer or is out of its range, a missing argument) with a usage block and exit
status 2, the status kinefit keeps for its own bugs ("internal error"). Here such a
mistake is one ``error:`` line that names the option (click's wording) and points at
the command's ``--help``, with exit status 1 like every other user error. Asking for
help (``kinefit``, ``kinefit export`` without a command) is not an error and prints it.
"""

from __future__ import annotations

from typing import Any

import typer
import typer.core

from flows.cli.output import error

__all__ = ["KinefitGroup"]


class KinefitGroup(typer.core.TyperGroup):
    """A :class:`typer.core.TyperGroup` that reports click's usage errors as one line."""

    def invoke(self, ctx: Any) -> Any:
        """Run the command; a usage error of it or of any subcommand exits 1 with one line."""
        try:
            return super().invoke(ctx)
        except typer.TyperException as exc:
            if not _is_usage_error(exc):
                raise
            command = getattr(getattr(exc, "ctx", None), "command_path", None) or "kinefit"
            message = exc.format_message().rstrip().rstrip(".")
            error(f"{message} (see: {command} --help)")
            raise typer.Exit(1) from None


def _is_usage_error(exc: BaseException) -> bool:
    """Click's ``UsageError`` family (typer's own copy), but not a request for help."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    return "UsageError" in names and "NoArgsIsHelpError" not in names
