"""Prefect's environment for kinefit's commands: quiet, offline, with kinefit's own home.

Prefect reads its settings from the environment when it is first imported, so
:func:`prepare_prefect_env` runs before any ``import prefect``: when the ``flows`` package
is imported (so the flows used from Python behave like the CLI), and again in each command.
It fills in environment variables (values the user already set are never overridden)
and creates the Prefect home folder.

- ``PREFECT_HOME``: kinefit's own (``$KINEFIT_HOME/prefect``, default
  ``~/.kinefit/prefect``) unless set. The ephemeral server's SQLite database lives there,
  so one-off runs (``kinefit demo``, ``kinefit reprocess``) are recorded and can be
  browsed later with ``kinefit serve`` (same home) in the Prefect UI.
- No telemetry or analytics (``DO_NOT_TRACK``, ``PREFECT_SERVER_ANALYTICS_ENABLED``,
  ``PREFECT_TELEMETRY_ENABLE_RESOURCE_METRICS``).
- ``PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS=90``: the first ephemeral server
  with an empty home takes 15-17 s on a 2-core machine, near Prefect's default of 20 s.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from pathlib import Path

#: Settings that keep Prefect quiet and offline (applied with ``setdefault``).
QUIET_ENV: dict[str, str] = {
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_TELEMETRY_ENABLE_RESOURCE_METRICS": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",
}


def kinefit_home() -> Path:
    """Return the state folder of kinefit: ``$KINEFIT_HOME`` or ``~/.kinefit``."""
    return Path(os.environ.get("KINEFIT_HOME") or Path.home() / ".kinefit").expanduser()


def prepare_prefect_env(env: MutableMapping[str, str] | None = None) -> MutableMapping[str, str]:
    """Fill in kinefit's Prefect defaults (``setdefault``) in ``env`` (default: os.environ).

    Returns
    -------
    mapping
        ``env``, updated.
    """
    env = os.environ if env is None else env
    for key, value in QUIET_ENV.items():
        env.setdefault(key, value)
    env.setdefault("PREFECT_HOME", str(kinefit_home() / "prefect"))
    Path(env["PREFECT_HOME"]).mkdir(parents=True, exist_ok=True)
    return env
