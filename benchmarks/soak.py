"""Soak: a synthetic archive of many long fly sessions reprocessed on a 2-worker cluster.

Measures:

1. the first run of the whole archive (ingest + fit of every session): wall time, frames
   per second, peak memory (``VmHWM``) of each worker process;
2. a second run on the unchanged archive: every session must be skipped (ingest and fit
   fingerprints match), and how long that takes (target: under 10 s).

By default the archive is run through ``flows.archive.reprocess_archive`` (the scheduled
job: Prefect ephemeral server, one LocalCluster shared by the ingest and fit subflows);
``--mode sessions`` instead calls ``pipeline.archive.ingest.ingest_session`` and
``pipeline.fit.fit_session`` per session on one shared ``distributed.Client`` (no
Prefect), which separates kinefit's own cost from the orchestrator's.

Run::

    .venv/bin/python benchmarks/soak.py                          # 50 x 100 000 frames
    .venv/bin/python benchmarks/soak.py --sessions 10 --frames 20000 --mode sessions

Sessions are npz files (the fly plan, 31 keypoints, mm, 100 fps, noise and dropouts);
synthesizing 5M frames takes about 2 minutes and 2 GB of disk. Never part of the tests.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one core per process, before numpy loads

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.bodyplan import load_body_plan  # noqa: E402
from pipeline.synth import SynthConfig, synthesize  # noqa: E402

SHARED = Path(os.environ.get("KINEFIT_SHARED", ROOT.parent / "shared"))
FLY = SHARED / "data" / "quickik" / "neuromechfly_ypr_legs.json"
QUIET = {
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_TELEMETRY_ENABLE_RESOURCE_METRICS": "false",
    "PREFECT_SERVER_UI_ENABLED": "false",
    "PREFECT_LOGGING_TO_API_ENABLED": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",
}


def peak_rss() -> int:
    """Peak RSS (bytes) of this process, ``VmHWM`` (runs on each worker)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def write_archive(folder: Path, n_sessions: int, n_frames: int, seed: int) -> int:
    """Write ``n_sessions`` npz sessions of the fly; return the total frames."""
    plan = load_body_plan(FLY)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    config = SynthConfig(n_frames=n_frames, noise=0.002, dropout=0.01, fps=100.0)
    for i in range(n_sessions):
        path = folder / f"fly{i:03d}.npz"
        if path.exists():
            continue
        tracks = synthesize(plan, config, rng, session=path.stem).tracks
        np.savez(
            path,
            position=tracks["position"].values[..., 0].transpose(0, 2, 1),
            confidence=tracks["confidence"].values[..., 0],
            keypoints=np.array(tracks["keypoint"].values.tolist()),
            fps=np.float64(100.0),
            unit=np.str_("mm"),
        )
        print(f"  wrote {path.name} ({i + 1}/{n_sessions})", flush=True)
    return n_sessions * n_frames


def run_config(folder: Path, workers: int, concurrent: int) -> dict:
    """The run config of the soak archive (as a mapping of overrides)."""
    return {
        "archive": {
            "path": str(folder / "archive"),
            "patterns": ["*.npz"],
            "naming": "stem",
            "fps": None,
        },
        "body_plan": str(FLY),
        "solver": {},
        "chunking": {
            "tracks_chunk_frames": 4096,
            "chunk_frames": None,
            "concurrent_sessions": concurrent,
        },
        "cluster": {"mode": "local", "n_workers": workers},
        "outputs": {"root": str(folder / "out"), "write_report": False, "exports": []},
    }


def run_reprocess(settings: dict) -> dict:
    """One ``reprocess_archive`` run; its summary as numbers."""
    from flows.archive import reprocess_archive
    from pipeline.config import load_run_config

    config = load_run_config(None, settings)
    t0 = time.perf_counter()
    summary = reprocess_archive(config)
    wall = time.perf_counter() - t0
    failed = [(s.session, s.error) for s in summary.sessions if s.status == "failed"]
    return {
        "wall_s": wall,
        "fit_s": summary.fit_seconds,
        "fitted": summary.fitted,
        "skipped": summary.skipped,
        "failed": failed,
        "frames": summary.frames,
    }


def run_sessions(settings: dict, client) -> dict:
    """Ingest + fit every session on one client, no Prefect."""
    from pipeline.archive.discover import discover_sessions, session_store
    from pipeline.archive.ingest import ingest_session
    from pipeline.config import load_run_config
    from pipeline.fit import fit_session

    config = load_run_config(None, settings)
    plan = load_body_plan(FLY)
    t0 = time.perf_counter()
    sources = discover_sessions(config.archive)
    fitted = skipped = frames = 0
    failed = []
    tracks_root, fits_root = config.outputs.tracks_dir, config.outputs.fits_dir
    for source in sources:
        try:
            tracks = session_store(tracks_root, source.name)
            ingest_session(source, str(tracks), config.chunking.tracks_chunk_frames)
            report = fit_session(
                tracks,
                plan,
                config.solver_config,
                session_store(fits_root, source.name),
                client=client,
            )
        except Exception as exc:  # noqa: BLE001 - counted and listed, like the flow
            failed.append((source.name, str(exc)))
            continue
        if report.skipped:
            skipped += 1
        else:
            fitted += 1
            frames += report.n_frames * report.n_individuals
    wall = time.perf_counter() - t0
    return {
        "wall_s": wall,
        "fitted": fitted,
        "skipped": skipped,
        "failed": failed,
        "frames": frames,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--frames", type=int, default=100_000, help="frames per session")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrent", type=int, default=2, help="sessions fitted at once")
    parser.add_argument("--mode", choices=("reprocess", "sessions"), default="reprocess")
    parser.add_argument("--folder", type=Path, default=None, help="default: a temp folder")
    parser.add_argument("--keep", action="store_true", help="keep the folder")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures")
    args = parser.parse_args()

    for key, value in QUIET.items():
        os.environ.setdefault(key, value)
    folder = args.folder or Path(tempfile.mkdtemp(prefix="kinefit-soak-"))
    print(f"soak: {args.sessions} sessions x {args.frames} frames in {folder}", flush=True)
    t0 = time.perf_counter()
    total = write_archive(folder / "archive", args.sessions, args.frames, seed=9)
    synth_s = time.perf_counter() - t0
    print(f"synthesized {total:,} frames in {synth_s:.0f} s", flush=True)
    settings = run_config(folder, args.workers, args.concurrent)
    from pipeline.cluster import ClusterConfig, cluster_client

    figures: dict = {
        "sessions": args.sessions,
        "frames_total": total,
        "mode": args.mode,
        "workers": args.workers,
        "synth_s": synth_s,
        "load_average": os.getloadavg(),
    }
    config = ClusterConfig(n_workers=args.workers, memory_limit=None)
    try:
        with cluster_client(config) as client:
            if args.mode == "reprocess":  # the flow connects to this cluster by address
                settings["cluster"] = {"mode": "address", "address": client.scheduler.address}
                first = run_reprocess(settings)
                peaks = client.run(peak_rss)
                second = run_reprocess(settings)
            else:
                first = run_sessions(settings, client)
                peaks = client.run(peak_rss)
                second = run_sessions(settings, client)
        figures.update(first=first, second=second)
        figures["peak_worker_rss_mib"] = {w: v / 2**20 for w, v in peaks.items()}
        fps = first["frames"] / first.get("fit_s", first["wall_s"])
        figures["frames_per_s_fit"] = fps
        figures["frames_per_s_wall"] = first["frames"] / first["wall_s"]
        print(json.dumps(figures, indent=2, default=str), flush=True)
        print(
            f"\nfirst run: {first['wall_s']:.0f} s wall, {first['fitted']} fitted, "
            f"{len(first['failed'])} failed, {first['frames']:,} frames, "
            f"{figures['frames_per_s_wall']:,.0f} frames/s end to end"
            f"\nsecond run: {second['wall_s']:.1f} s, skipped {second['skipped']} of "
            f"{args.sessions} (target: all, under 10 s)"
        )
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2, default=str))
    finally:
        if not args.keep and args.folder is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
