"""Orchestration: the ``kinefit`` command line and (later) Prefect flows around ``pipeline``."""
