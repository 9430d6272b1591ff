"""The run config of ``kinefit fit``: a config file or the defaults, and the CLI's options."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from flows.cli.common import cluster_override

__all__ = ["fit_config"]


def fit_config(
    config: Path | None,
    body_plan: str | None,
    workers: int | None,
    scheduler: str | None,
    assignments: list[str] | None = None,
    size: tuple[int, int] = (0, 1),
) -> Any:
    """The run config of ``kinefit fit``: the file (or the models' defaults) + CLI options.

    ``size`` (frames, individuals) picks the local width when nothing names a cluster.
    """
    from flows.cli.cluster import check_workers_option
    from pipeline.cluster.cluster_config import session_width
    from pipeline.config import load_run_config, make_run_config

    cluster = cluster_override(workers, scheduler)
    if config is not None:
        check_workers_option(
            workers, load_run_config(config, assignments=assignments or ()).cluster
        )
        overrides = {"body_plan": body_plan, "cluster": cluster}
        return load_run_config(config, overrides=overrides, assignments=assignments or ())
    if body_plan is None:
        raise typer.BadParameter(
            "pass --body-plan (a JSON file or 'mannequin') or a --config naming body_plan",
            param_hint="--body-plan",
        )
    # No file: the solver's own defaults (not the demo's mannequin tuning) and a local
    # cluster as wide as the machine, or this process for a small session.
    width = {"mode": "local", "n_workers": session_width(*size)}
    settings: dict[str, Any] = {"body_plan": body_plan, "cluster": cluster or width}
    return make_run_config(settings, assignments or ())
