"""Session scaling: a long synthetic fly session fitted end to end on a LocalCluster.

Measures:

1. throughput of ``pipeline.fit.fit_session`` with 1 and 2 worker processes (target: 2
   workers >= 1.8x one worker);
2. the machine's own ceiling beside it, same run: the raw solver (``solve_sequence`` on
   the same chunks, data in memory, no Dask and no I/O) in 1 and in 2 plain processes
   started together. On a shared 2-core virtual machine two busy processes each run
   slower than one alone, so no scheduler can beat this ratio; the fit's speed-up is
   also printed as a fraction of it;
3. end-to-end efficiency: the raw solver in 1 process against the 1-worker end-to-end
   fit (read + hash + solve + write), as ``raw seconds / end-to-end seconds``
   (target >= 0.7);
4. peak worker memory (peak RSS, ``VmHWM``, of each worker process) for the session
   and for a session twice as long (target < 1 GiB, flat when the session doubles).

Run::

    .venv/bin/python benchmarks/session_scaling.py                 # 500k frames
    .venv/bin/python benchmarks/session_scaling.py --frames 100000 --skip-double
    .venv/bin/python benchmarks/session_scaling.py --skip-double --repeats 3   # medians

A 500k-frame run takes several minutes on 2 cores; it is never part of the tests.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one core per process, before numpy loads

import argparse  # noqa: E402
import json  # noqa: E402
import multiprocessing  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402
from _common import where_measured  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.bodyplan import load_body_plan  # noqa: E402
from pipeline.cluster import ClusterConfig, cluster_client  # noqa: E402
from pipeline.fit import fit_session  # noqa: E402
from pipeline.fit.world_frame import WorldFrameWarning  # noqa: E402
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


def _chunks(tracks: Path, chunk_frames: int, overlap: int) -> list[tuple[np.ndarray, ...]]:
    """The session's chunks as the fit solves them (with overlap): (positions, weights)."""
    ds = open_tracks(tracks).load()
    position = ds["position"].values[..., 0].transpose(0, 2, 1).astype(np.float64)
    confidence = ds["confidence"].values[..., 0].astype(np.float64)
    weights = np.where(np.isfinite(position).all(-1), confidence, 0.0)
    out = []
    for start in range(0, position.shape[0], chunk_frames):
        lo, stop = max(start - overlap, 0), min(start + chunk_frames, position.shape[0])
        out.append((position[lo:stop], weights[lo:stop]))
    return out


def _plain_worker(job: tuple, barrier, results) -> None:
    """One plain process: load its share of the chunks, wait for the others, solve them."""
    tracks, plan_file, chunk_frames, overlap, share, n_shares = job
    plan, config = load_body_plan(plan_file), SolverConfig()
    chunks = _chunks(tracks, chunk_frames, overlap)[share::n_shares]
    solve_sequence(plan, chunks[0][0][:64], chunks[0][1][:64], config)  # kernels loaded
    barrier.wait()
    t0 = time.perf_counter()
    for position, weights in chunks:
        solve_sequence(plan, position, weights, config)
    results.put(time.perf_counter() - t0)


def raw_solver(tracks: Path, plan_file: Path, chunk_frames: int, overlap: int, n: int) -> float:
    """Seconds for ``n`` plain processes to solve the session's chunks between them.

    Each process takes every ``n``-th chunk, loads it before a common start (not timed)
    and solves it with ``solve_sequence``: no Dask, no store, no hashing. The time is the
    slowest process's.
    """
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(n), ctx.Queue()
    jobs = [(tracks, plan_file, chunk_frames, overlap, i, n) for i in range(n)]
    procs = [ctx.Process(target=_plain_worker, args=(job, barrier, results)) for job in jobs]
    for proc in procs:
        proc.start()
    seconds = [results.get() for _ in procs]
    for proc in procs:
        proc.join()
    return max(seconds)


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
    parser.add_argument(
        "--repeats", type=int, default=1, help="repeat the four timings; medians reported"
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)

    load_before = os.getloadavg()[0]
    # The synthetic fly has no stated up axis; the world is not turned either way.
    warnings.filterwarnings("ignore", category=WorldFrameWarning)
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
        worker_counts = (2,) if args.memory_only else (1, 2)
        runs: dict[str, list[float]] = {}
        for repeat in range(args.repeats):
            for workers in worker_counts:
                seconds, peak, timings = fit_on_cluster(
                    tracks, plan, config, folder / f"fit{workers}.zarr", workers,
                    args.chunk_frames,
                )  # fmt: skip
                runs.setdefault(f"workers_{workers}", []).append(seconds)
                last = results.get(f"workers_{workers}", {}).get("peak_worker_rss_mib", 0.0)
                results[f"workers_{workers}"] = {  # the largest peak over the repeats
                    "peak_worker_rss_mib": max(last, peak / 2**20),
                    "timings": timings,
                }
                print(
                    f"[{repeat + 1}/{args.repeats}] {workers} worker(s): {seconds:.1f} s, "
                    f"{args.frames / seconds:,.0f} frames/s, "
                    f"peak worker RSS {peak / 2**20:.0f} MiB",
                    flush=True,
                )
            if args.memory_only:
                continue
            for procs in (1, 2):
                raw = raw_solver(
                    tracks, args.body_plan, args.chunk_frames, args.overlap_frames, procs
                )
                runs.setdefault(f"plain_{procs}", []).append(raw)
                print(
                    f"[{repeat + 1}/{args.repeats}] raw solver, same chunks, {procs} plain "
                    f"process(es): {raw:.1f} s ({args.frames / raw:,.0f} frames/s)",
                    flush=True,
                )
        med = {key: statistics.median(values) for key, values in runs.items()}
        for workers in worker_counts:
            key = f"workers_{workers}"
            results[key].update(
                seconds=med[key], frames_per_s=args.frames / med[key], repeats=runs[key]
            )
        if not args.memory_only:
            one, two = med["workers_1"], med["workers_2"]
            ceiling = med["plain_1"] / med["plain_2"]
            results.update(
                raw_solver_seconds=med["plain_1"],
                raw_solver_2_processes_seconds=med["plain_2"],
                plain_runs={key: runs[key] for key in ("plain_1", "plain_2")},
                speedup_2_vs_1=one / two,
                machine_ceiling_2_vs_1=ceiling,
                raw_over_end_to_end=med["plain_1"] / one,
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
    print(f"\n{where_measured(load_before)}; medians of {args.repeats} repeat(s)")
    if not args.memory_only:
        speedup, ceiling = results["speedup_2_vs_1"], results["machine_ceiling_2_vs_1"]
        print(
            f"speed-up 2 vs 1 worker: {speedup:.2f}x (target >= 1.8) -> "
            f"{'MET' if speedup >= 1.8 else 'NOT MET'}\n"
            f"the machine's ceiling, raw solver in 2 vs 1 plain processes: {ceiling:.2f}x; "
            f"the fit reaches {speedup / ceiling:.0%} of it\n"
            f"raw solver / end-to-end (1 worker): {results['raw_over_end_to_end']:.2f} "
            f"(target >= 0.7) -> {'MET' if results['raw_over_end_to_end'] >= 0.7 else 'NOT MET'}"
        )
    print(
        f"peak worker RSS (largest over the repeats): "
        f"{results['workers_2']['peak_worker_rss_mib']:.0f} MiB"
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
