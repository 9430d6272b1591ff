"""Session scaling: a long synthetic fly session fitted end to end on a LocalCluster.

Measures:

1. throughput of ``pipeline.fit.fit_session`` with 1 and 2 worker processes (target: 2
   workers >= 1.8x one worker);
2. end-to-end efficiency: the raw solver (``solve_sequence`` on the same chunks, in this
   process, no I/O) against the 1-worker end-to-end fit (read + hash + solve + write),
   as ``raw seconds / end-to-end seconds`` (target >= 0.7);
3. peak worker memory (peak RSS, ``VmHWM``, of each worker process) for the session
   and for a session twice as long (target < 1 GiB, flat when the session doubles).

Run::

    .venv/bin/python benchmarks/session_scaling.py                 # 500k frames
    .venv/bin/python benchmarks/session_scaling.py --frames 100000 --skip-double

A 500k-frame run takes several minutes on 2 cores; it is never part of the tests.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one core per process, before numpy loads

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.bodyplan import load_body_plan  # noqa: E402
from pipeline.cluster import ClusterConfig, cluster_client  # noqa: E402
from pipeline.fit import fit_session  # noqa: E402
from pipeline.solve import SolverConfig, solve_sequence  # noqa: E402
from pipeline.store import open_tracks, write_tracks  # noqa: E402
from pipeline.store.fit import open_fit  # noqa: E402
from pipeline.synth import SynthConfig, synthesize  # noqa: E402

SHARED = Path(os.environ.get("KINEFIT_SHARED", ROOT.parent / "shared"))
FLY = SHARED / "data" / "quickik" / "neuromechfly_ypr_legs.json"


def _peak_rss() -> int:
    """Peak RSS (bytes) of this process: ``VmHWM`` of ``/proc/self/status``.

    Not ``getrusage``: its ``ru_maxrss`` survives fork + exec, so a spawned worker would
    report the RSS of the process that spawned it.
    """
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return -1


def make_session(plan, n_frames: int, chunk_frames: int, folder: Path) -> Path:
    """Synthesize a fly session (noise, dropouts, outliers) into a tracks store."""
    config = SynthConfig(n_frames=n_frames, noise=0.002, dropout=0.01, outliers=0.002)
    tracks = synthesize(plan, config, np.random.default_rng(2026)).tracks
    return write_tracks(tracks, folder / f"fly_{n_frames}.zarr", chunk_frames, overwrite=True)


def doubled(path: Path, folder: Path, chunk_frames: int) -> Path:
    """The same session played twice in a row (time continues), as a new store."""
    ds = open_tracks(path).load()
    second = ds.assign_coords(time=ds["time"].values + ds["time"].values[-1] + 1 / ds.attrs["fps"])
    both = xr.concat([ds, second], dim="time")
    both.attrs = ds.attrs
    return write_tracks(both, folder / f"{path.stem}_x2.zarr", chunk_frames, overwrite=True)


def fit_on_cluster(tracks: Path, plan, config, out: Path, workers: int, chunk_frames: int):
    """Fit on a fresh LocalCluster; return (seconds, peak worker RSS bytes, timings)."""
    with cluster_client(ClusterConfig(n_workers=workers)) as client:
        t0 = time.perf_counter()
        fit_session(tracks, plan, config, out, client=client, chunk_frames=chunk_frames, force=True)
        seconds = time.perf_counter() - t0
        peak = max(client.run(_peak_rss).values())
    return seconds, peak, open_fit(out).attrs["timings"]


def raw_solver(tracks: Path, plan, config, chunk_frames: int, overlap: int) -> float:
    """Seconds of solve_sequence on the same chunks (with overlap), data in memory."""
    ds = open_tracks(tracks).load()
    position = ds["position"].values[..., 0].transpose(0, 2, 1).astype(np.float64)
    confidence = ds["confidence"].values[..., 0].astype(np.float64)
    weights = np.where(np.isfinite(position).all(-1), confidence, 0.0)
    total = 0.0
    for start in range(0, position.shape[0], chunk_frames):
        lo, stop = max(start - overlap, 0), min(start + chunk_frames, position.shape[0])
        t0 = time.perf_counter()
        solve_sequence(plan, position[lo:stop], weights[lo:stop], config)
        total += time.perf_counter() - t0
    return total


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=500_000)
    parser.add_argument("--chunk-frames", type=int, default=8192)
    parser.add_argument("--overlap-frames", type=int, default=16)
    parser.add_argument("--body-plan", type=Path, default=FLY)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--skip-double", action="store_true", help="skip the 2x session")
    parser.add_argument(
        "--memory-only", action="store_true", help="only the 2-worker fits of 1x and 2x"
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)

    plan = load_body_plan(args.body_plan)
    config = SolverConfig()
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        folder = Path(tmp)
        t0 = time.perf_counter()
        tracks = make_session(plan, args.frames, args.chunk_frames, folder)
        print(
            f"session: {args.frames} frames, {plan.n_dofs} DOFs "
            f"({time.perf_counter() - t0:.0f} s to synthesize and write)",
            flush=True,
        )
        results: dict = {"frames": args.frames, "chunk_frames": args.chunk_frames}
        for workers in (2,) if args.memory_only else (1, 2):
            seconds, peak, timings = fit_on_cluster(
                tracks, plan, config, folder / f"fit{workers}.zarr", workers, args.chunk_frames
            )
            results[f"workers_{workers}"] = {
                "seconds": seconds,
                "frames_per_s": args.frames / seconds,
                "peak_worker_rss_mib": peak / 2**20,
                "timings": timings,
            }
            print(
                f"{workers} worker(s): {seconds:.1f} s, {args.frames / seconds:,.0f} frames/s, "
                f"peak worker RSS {peak / 2**20:.0f} MiB",
                flush=True,
            )
        if not args.memory_only:
            raw = raw_solver(tracks, plan, config, args.chunk_frames, args.overlap_frames)
            one, two = results["workers_1"]["seconds"], results["workers_2"]["seconds"]
            results.update(
                raw_solver_seconds=raw, speedup_2_vs_1=one / two, raw_over_end_to_end=raw / one
            )
            print(
                f"raw solver, same chunks, this process: {raw:.1f} s "
                f"({args.frames / raw:,.0f} frames/s)",
                flush=True,
            )
        if not args.skip_double:
            big = doubled(tracks, folder, args.chunk_frames)
            seconds, peak, _ = fit_on_cluster(
                big, plan, config, folder / "fit_x2.zarr", 2, args.chunk_frames
            )
            results["double_session"] = {
                "frames": 2 * args.frames,
                "seconds": seconds,
                "peak_worker_rss_mib": peak / 2**20,
            }
            print(
                f"2x session on 2 workers: {seconds:.1f} s, peak worker RSS {peak / 2**20:.0f} MiB",
                flush=True,
            )
    if not args.memory_only:
        print(
            f"\nspeed-up 2 vs 1 worker: {results['speedup_2_vs_1']:.2f}x (target >= 1.8)\n"
            f"raw solver / end-to-end (1 worker): {results['raw_over_end_to_end']:.2f} "
            "(target >= 0.7)"
        )
    print(
        f"peak worker RSS: {results['workers_2']['peak_worker_rss_mib']:.0f} MiB"
        + (
            f", {results['double_session']['peak_worker_rss_mib']:.0f} MiB for the 2x session"
            if "double_session" in results
            else ""
        )
        + " (target < 1024, flat)"
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
