"""kinefit's command line (typer): one app, its command groups in the modules beside it."""

from flows.cli import bodyplan_tools  # noqa: F401 (adds body-plan convert/edit/combine/map)
from flows.cli.app import app

__all__ = ["app"]
