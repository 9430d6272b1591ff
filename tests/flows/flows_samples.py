"""Small archives and run configs for the flow tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pipeline.config import RunConfig, load_run_config
from pipeline.config_files import deep_merge
from pipeline.demo import write_demo_archive


def demo_archive(folder: Path, plan, n_frames: int = 64, seed: int = 7) -> list[Path]:
    """The demo's sessions, short."""
    return write_demo_archive(folder, plan, np.random.default_rng(seed), n_frames=n_frames)


def run_config(root: Path, address: str | None, **settings) -> RunConfig:
    """A run config over ``root/archive`` into ``root``, on the shared cluster."""
    cluster = {"mode": "address", "address": address} if address else {"n_workers": 0}
    overrides = {
        "archive": {"path": str(root / "archive")},
        "outputs": {"root": str(root), "write_report": False, "report_detailed": 0},
        "chunking": {"tracks_chunk_frames": 32},
        "cluster": cluster,
    }
    return load_run_config(None, deep_merge(overrides, settings))
