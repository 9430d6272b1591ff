"""The local cluster width of a run that names no cluster."""

from __future__ import annotations

import os

from pipeline.cluster.cluster_config import MAX_MACHINE_WORKERS, machine_width


def test_one_worker_per_core_from_one_to_the_cap():
    assert machine_width(1) == 1
    assert machine_width(4) == 4
    assert machine_width(64) == MAX_MACHINE_WORKERS == 8
    assert machine_width(64, cap=16) == 16
    assert machine_width(0) == 1  # os.cpu_count() may be None or 0: one worker


def test_the_default_is_this_machines_width():
    assert machine_width() == max(1, min(os.cpu_count() or 1, MAX_MACHINE_WORKERS))
