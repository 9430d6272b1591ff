"""Orchestration: Prefect flows around ``pipeline`` and the ``kinefit`` command line.

``flows.archive`` holds the flows (``ingest_archive``, ``fit_archive``,
``reprocess_archive_flow``, ``export_session``) and ``reprocess_archive`` (the flow run from
Python with the library logs quiet, :mod:`flows.logs`), ``flows.tasks`` their thin tasks,
``flows.server`` the ``kinefit serve`` deployment, ``flows.cli`` the command line.

Importing ``flows`` fills in kinefit's Prefect environment (:mod:`flows.env`: kinefit's own
Prefect home, no telemetry) before anything imports prefect, so the flows behave the same
from Python as from the CLI.
"""

from flows.env import prepare_prefect_env

prepare_prefect_env()
