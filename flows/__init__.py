"""Orchestration: Prefect flows around ``pipeline`` and the ``kinefit`` command line.

``flows.archive`` holds the flows (``ingest_archive``, ``fit_archive``,
``reprocess_archive``, ``export_session``), ``flows.tasks`` their thin tasks,
``flows.server`` the ``kinefit serve`` deployment, ``flows.cli`` the command line.
"""
