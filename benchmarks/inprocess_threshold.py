"""When local worker processes pay off: ``kinefit fit`` in this process against 2 workers.

``kinefit fit`` without a config or ``--workers`` fits sessions of at most
``IN_PROCESS_MAX_FRAMES`` frame-individuals in its own process
(:func:`pipeline.cluster.cluster_config.session_width`): starting a LocalCluster (worker
processes that import the stack and load the compiled solver) costs seconds that a small
session never wins back. This script measures the crossover: synthetic mannequin
sessions of several lengths, each fitted by the command line as a user runs it (a fresh
process, wall time including start-up), with ``--workers 0`` and ``--workers 2``.

On a shared machine the load drifts, so the runs are interleaved: each round fits every
length with both widths (the order of the widths alternating between rounds), and the
table reports per length the median wall time of each width over the rounds, the
smallest and largest ratio (the spread) and the load average seen around those runs.

Run::

    .venv/bin/python benchmarks/inprocess_threshold.py                    # 2330 ... 320000
    .venv/bin/python benchmarks/inprocess_threshold.py --frames 2330 10000 --repeats 1

It prints the machine, commit and load, then one row per session length: the median
wall seconds of each width, the median ratio (workers / in-process: above 1 the workers
cost more than they save) with its range over the rounds, and the width the default
picks. Never part of the tests.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
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


def _machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        names = [ln for ln in Path("/proc/cpuinfo").read_text().splitlines() if "model name" in ln]
        cpu = names[0].split(":", 1)[1].strip() if names else cpu
    except OSError:
        pass
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"{platform.node()}: {os.cpu_count()} cores {cpu}; commit {commit or '?'}; {when}"


def _load() -> float:
    return os.getloadavg()[0]


def main() -> None:
    """Print the in-process and 2-worker wall times per session length."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--frames", type=int, nargs="+", default=[2330, 20000, 80000, 160000, 320000]
    )
    parser.add_argument("--repeats", type=int, default=3, help="rounds over all lengths")
    args = parser.parse_args()
    from pipeline.cluster.cluster_config import IN_PROCESS_MAX_FRAMES, session_width

    print(_machine())
    print(f"load average at start {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    times: dict[tuple[int, int], list[float]] = {(n, w): [] for n in args.frames for w in (0, 2)}
    loads: dict[int, list[float]] = {n: [] for n in args.frames}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        sessions = {n: _session(folder, n) for n in args.frames}
        for round_ in range(args.repeats):
            widths = (0, 2) if round_ % 2 == 0 else (2, 0)
            for n in args.frames:
                loads[n].append(_load())
                for w in widths:
                    seconds = _fit_seconds(sessions[n], folder / f"fit{n}_{w}.zarr", w)
                    times[n, w].append(seconds)
                    print(
                        f"  round {round_ + 1} {n:>7} frames {w} workers {seconds:6.1f} s"
                        f" (load {_load():.1f})",
                        flush=True,
                    )
    print(f"load average at end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    head = f"{'frames':>8} {'in-process s':>13} {'2 workers s':>12} {'ratio':>6}"
    print(f"{head} {'ratio range':>12} {'load':>9} {'default':>8}")
    for n in args.frames:
        here, two = (statistics.median(times[n, w]) for w in (0, 2))
        ratios = [b / a for a, b in zip(times[n, 0], times[n, 2], strict=True)]
        spread = f"{min(ratios):.2f}-{max(ratios):.2f}"
        load = f"{min(loads[n]):.1f}-{max(loads[n]):.1f}"
        print(
            f"{n:>8} {here:>13.1f} {two:>12.1f} {two / here:>6.2f} {spread:>12} {load:>9}"
            f" {session_width(n):>8}"
        )
    print(f"IN_PROCESS_MAX_FRAMES = {IN_PROCESS_MAX_FRAMES} frame-individuals")


if __name__ == "__main__":
    main()
