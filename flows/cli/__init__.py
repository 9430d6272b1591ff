"""kinefit's command line (typer): one app, its command groups in the modules beside it."""

from flows.cli.app import app

__all__ = ["app"]
