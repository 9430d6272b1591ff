"""When local worker processes pay off: ``kinefit fit`` in this process against 2 workers.

``kinefit fit`` without a config or ``--workers`` fits sessions of at most
``IN_PROCESS_MAX_FRAMES`` frame-individuals in its own process
(:func:`pipeline.cluster.cluster_config.session_width`): starting a LocalCluster (worker
processes that import the stack and load the compiled solver) costs seconds that a small
session never wins back. This script measures the crossover: synthetic mannequin
sessions of growing length, each fitted by the command line as a user runs it (a fresh
process, wall time including start-up), with ``--workers 0`` and ``--workers 2``.

Run::

    .venv/bin/python benchmarks/inprocess_threshold.py                    # 2330 ... 40000
    .venv/bin/python benchmarks/inprocess_threshold.py --frames 2330 10000 --repeats 1

It prints one row per session length: the median wall seconds of each width, their ratio
(workers / in-process: above 1 the workers cost more than they save) and the width the
default picks. Never part of the tests.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _session(folder: Path, n_frames: int) -> Path:
    import numpy as np

    from pipeline.bodyplan import mannequin
    from pipeline.store import write_tracks
    from pipeline.synth import SynthConfig, synthesize

    synth = synthesize(
        mannequin(), SynthConfig(n_frames=n_frames, noise=0.003), np.random.default_rng(7)
    )
    tracks = synth.tracks.assign_attrs(up_axis="y")
    return write_tracks(tracks, folder / f"walk{n_frames}.zarr", chunk_frames=1000)


def _fit_seconds(tracks: Path, out: Path, workers: int) -> float:
    command = [sys.executable, "-m", "flows.cli", "fit", str(tracks), "-o", str(out)]
    command += ["-b", "mannequin", "--workers", str(workers), "--force"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}")
    return seconds


def main() -> None:
    """Print the in-process and 2-worker wall times per session length."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, nargs="+", default=[2330, 10000, 20000, 40000])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from pipeline.cluster.cluster_config import IN_PROCESS_MAX_FRAMES, session_width

    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores")
    print(f"{'frames':>8} {'in-process s':>13} {'2 workers s':>12} {'ratio':>6} {'default':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for n in args.frames:
            tracks = _session(folder, n)
            times = {w: [] for w in (0, 2)}
            for _ in range(args.repeats):
                for w in times:
                    times[w].append(_fit_seconds(tracks, folder / f"fit{n}_{w}.zarr", w))
            here, two = (statistics.median(times[w]) for w in (0, 2))
            default = session_width(n)
            print(f"{n:>8} {here:>13.1f} {two:>12.1f} {two / here:>6.2f} {default:>8}")
    print(f"IN_PROCESS_MAX_FRAMES = {IN_PROCESS_MAX_FRAMES} frame-individuals")


if __name__ == "__main__":
    main()
