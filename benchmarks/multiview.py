"""Multi-camera 2D fits of the fly: speed on one core and accuracy against the baseline.

Workload: a synthetic fly session (``pipeline.synth``) seen by 2 and 4 calibrated cameras
30 mm away (radtan lenses, the last of four fisheye; ``tests/fixtures/multiview_rig.py``),
degraded as a 2D tracker would (2 px noise, per-view occlusions, keypoints one camera sees,
1 % outliers; ``pipeline.synth.camera_views``). Each rig is fitted in memory with
``solve_sequence``:

- direct: the skeleton fitted to every view's pixels (``CalibratedCameras``), on the
  compiled engine (projection rows, :mod:`pipeline.solve.compiled.projection`) and the
  numpy engine, whose results it equals;
- triangulate: DLT per keypoint (``pipeline.cameras.triangulate``), then the 3D fit, on
  the compiled and the numpy engine;
- one view: the fly's keypoints on the image plane (``XYView``, a single-camera session's
  fit), on both engines.

Frames/s are medians over ``--repeats`` runs; angle errors (deg) against the synthetic
truth are pooled over frames and DOFs (median and 95th percentile). Robust loss: Cauchy,
5 px (direct) or the same number in mm (triangulate). Run
``python benchmarks/multiview.py --help``.

``--pose2sim`` runs Pose2Sim's demo trial end to end instead (4 cameras of OpenPose
BODY_25B JSON, 100 frames, ``Model_Pose2Sim_body25b_scaled.osim``; the shared data's
``pose2sim`` folder): ingest with its ``Config.toml`` (reading, person association,
store), the model's import, the session fit in this process (direct, then
``triangulate``: DLT then the 3D fit, the baseline; compiled kernels and the plan loaded
first, on 2 frames), and the ``.mot`` export, each stage timed, the same run. Fit frames/s
are given twice: over the solver's time (the fit store's per-chunk solve seconds) and over
the whole session fit (reading and writing its store). The peer, same run: OpenSim's
``InverseKinematicsTool`` with Pose2Sim's IK setup and scaled model on Pose2Sim's filtered
``.trc`` (its triangulation; the tool timed end to end) when ``opensim`` imports. Printed
with the commit, the date, the core count and the load average before and after.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from _common import DEFAULT_BODY_PLAN, REPO, where_measured  # noqa: E402

sys.path.insert(0, str(REPO))

from pipeline.bodyplan import load_body_plan  # noqa: E402
from pipeline.cameras import triangulate  # noqa: E402
from pipeline.solve import SolverConfig, XYView, solve_sequence  # noqa: E402
from pipeline.solve.compiled import warm_up  # noqa: E402
from pipeline.solve.mappers import CalibratedCameras  # noqa: E402
from pipeline.synth import SynthConfig, synthesize  # noqa: E402
from pipeline.synth.camera_views import ViewsConfig, render_views  # noqa: E402
from tests.fixtures.multiview_rig import angle_errors, fly_rig  # noqa: E402


def _timed(run, repeats: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def _opensim_ik(demo, tmp, n: int, fps: float) -> float | None:
    """Frames/s of OpenSim's IK tool on Pose2Sim's filtered ``.trc`` (its setup), or None."""
    import xml.etree.ElementTree as ET

    try:
        import opensim as osim
    except ImportError:
        return None
    osim.Logger.setLevelString("error")
    setup = demo / "opensim" / "IK_Setup_Pose2Sim_Body25b.xml"
    tree = ET.parse(setup)
    tool = tree.getroot().find("InverseKinematicsTool")
    fields = {
        "model_file": demo / "opensim" / "Model_Pose2Sim_body25b_scaled.osim",
        "marker_file": demo / "pose-3d" / "S00_P00_T01_BalancingTrial_0-100_filt_butterworth.trc",
        "results_directory": tmp,
        "output_motion_file": tmp / "opensim_ik.mot",
        "time_range": f"{1 / fps!r} {n / fps!r}",  # Frame# 1 .. n of the .trc
    }
    for tag, value in fields.items():
        tool.find(tag).text = str(value)
    tree.write(tmp / setup.name)
    ik = osim.InverseKinematicsTool(str(tmp / setup.name))
    t0 = time.perf_counter()
    ik.run()  # reads the .trc, solves, writes the .mot and the marker errors
    return n / (time.perf_counter() - t0)


def pose2sim_demo(frames: int | None) -> None:
    """Pose2Sim's demo trial end to end: wall time per stage, fit frames/s against peers."""
    import tempfile
    import warnings
    from pathlib import Path

    import xarray as xr

    from pipeline.archive.view_files import read_views
    from pipeline.config.pose2sim_project import pose2sim_reader_options
    from pipeline.export import export
    from pipeline.fit import fit_session
    from pipeline.kinematics.step_groups import compiled_refusal
    from pipeline.store import write_tracks
    from pipeline.store.chunks import chunk_seconds

    load_before = os.getloadavg()
    demo = REPO.parent / "shared" / "data" / "pose2sim"
    model = demo / "opensim" / "Model_Pose2Sim_body25b_scaled.osim"
    options = pose2sim_reader_options(demo / "Config.toml")
    fps = options.pop("fps")
    if frames:
        options["frame_range"] = (0, frames)
    stages, fit_fps, notes = {}, {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the skipped *.json.old files, model notes
            ds = read_views(
                sorted((demo / "pose").glob("cam0*_json")), demo / "Calib.toml", fps=fps, **options
            )
            write_tracks(ds, tmp / "demo.zarr")
            stages["ingest (read 4 x JSON, associate, store)"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            plan = load_body_plan(model)
            stages["import the .osim model"] = time.perf_counter() - t0
            write_tracks(ds.isel(time=slice(0, 2)), tmp / "warm.zarr")
            warm_up()
            for mode in ("direct", "triangulate"):  # compiled kernels and plan caches loaded
                fit_session(tmp / "warm.zarr", plan, SolverConfig(), tmp / "w", multiview=mode)
        n = ds.sizes["time"]
        for mode in ("direct", "triangulate"):
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # unobservable DOFs, unmapped keypoints
                report = fit_session(
                    tmp / "demo.zarr", plan, SolverConfig(), tmp / f"{mode}.zarr", multiview=mode
                )
            stages[f"fit, {mode}"] = wall = time.perf_counter() - t0
            solve = float(np.nansum(chunk_seconds(tmp / f"{mode}.zarr")[:, 1]))
            iters = xr.open_zarr(tmp / f"{mode}.zarr")["iterations"].values
            fit_fps[mode] = (n / solve, n / wall)
            notes[mode] = (report.not_converged, float(np.mean(iters)), int(np.max(iters)))
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # unobservable DOFs
            export("mot", tmp / "direct.zarr", tmp / "demo.mot")
        stages["export .mot"] = time.perf_counter() - t0
        peer = _opensim_ik(demo, tmp, n, fps)
    print(f"Pose2Sim demo, {n} frames, 4 cameras, one thread")
    print(where_measured(load_before[0]))
    for name, sec in stages.items():
        print(f"  {name:45s} {sec:7.2f} s")
    total = sum(v for k, v in stages.items() if "triangulate" not in k)
    print(f"  {'end to end (ingest, import, direct fit, export)':45s} {total:7.2f} s")
    refusal = compiled_refusal(plan)
    engine = f"numpy engine ({refusal})" if refusal else "compiled engine"
    print(f"  frames/s: solver (chunk solve time) / session fit (with its store); {engine}:")
    for mode, (solver, session) in fit_fps.items():
        bad, mean, top = notes[mode]
        print(
            f"    kinefit {mode:12s} {solver:8.1f} / {session:8.1f}   iterations mean "
            f"{mean:.1f}, max {top}; not converged {bad} of {n}"
        )
    if peer is None:
        print("    OpenSim IK: opensim not importable, not run")
    else:
        print(f"    OpenSim {'IK on the filtered .trc':17s} {peer:8.1f} (its tool, end to end)")
        print(f"  kinefit direct solver / OpenSim IK: {fit_fps['direct'][0] / peer:.1f}x")
    ratio = fit_fps["triangulate"][0] / fit_fps["direct"][0]
    print(f"  direct / triangulate solver time ratio {ratio:.2f}x")


def main() -> None:
    """Print the speed and accuracy tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--seed", type=int, default=4)
    parser.add_argument(
        "--pose2sim", action="store_true", help="Pose2Sim's demo trial end to end instead."
    )
    args = parser.parse_args()
    if args.pose2sim:
        return pose2sim_demo(args.frames if args.frames != 200 else None)
    plan = load_body_plan(DEFAULT_BODY_PLAN)
    rng = np.random.default_rng(args.seed)
    synth = synthesize(plan, SynthConfig(n_frames=args.frames, unit="mm"), rng)
    points = synth.truth["position"].values[..., 0].transpose(0, 2, 1)
    truth = synth.truth["dof_value"].values[:, 0]
    warm_up()
    rows = []
    for n in (2, 4):
        cams = fly_rig(n)
        pix, conf = render_views(points, cams, ViewsConfig(), np.random.default_rng(args.seed))
        direct_s = {}
        for engine in ("compiled", "numpy"):
            cfg = SolverConfig(loss="cauchy", loss_scale=5.0, engine=engine)
            direct_s[engine], direct = _timed(
                lambda cams=cams, pix=pix, conf=conf, cfg=cfg: solve_sequence(
                    plan, pix, conf, cfg, mapper=CalibratedCameras(cams)
                ),
                args.repeats,
            )
        w = conf.transpose(0, 2, 1)
        tri = triangulate(cams, pix.transpose(0, 2, 1, 3), w)
        seen = np.isfinite(tri).all(-1)
        w3 = np.where(seen, w.sum(-1) / np.maximum((w > 0).sum(-1), 1), 0.0)
        tri_s = {}
        for engine in ("compiled", "numpy"):
            c = SolverConfig(loss="cauchy", loss_scale=5.0, engine=engine)
            tri_s[engine], tri_fit = _timed(
                lambda c=c, tri=tri, w3=w3: solve_sequence(plan, tri, w3, c), args.repeats
            )
        for name, fit in (("direct", direct), ("triangulate", tri_fit)):
            err = np.degrees(angle_errors(fit.dof_value, truth))
            rows.append((n, name, np.median(err), np.percentile(err, 95)))
        for name, sec in (("direct", direct_s), ("triangulate then 3D fit", tri_s)):
            print(
                f"{n} cameras, {args.frames} frames, {name}: compiled "
                f"{args.frames / sec['compiled']:7.1f} frames/s, numpy "
                f"{args.frames / sec['numpy']:6.1f} frames/s, ratio "
                f"{sec['numpy'] / sec['compiled']:.1f}x"
            )
        print(f"  (DLT triangulated {np.mean(seen):.0%} of the keypoint-frames)")
    # one view: the image on the XY plane (XYView, a single-camera session's fit), 0.01 mm
    # noise; both engines, the same frames
    xy = points[..., :2] + np.random.default_rng(args.seed).normal(0, 0.01, points[..., :2].shape)
    one_s = {}
    for engine in ("compiled", "numpy"):
        c = SolverConfig(engine=engine)
        one_s[engine], _ = _timed(
            lambda c=c: solve_sequence(plan, xy, None, c, mapper=XYView()), args.repeats
        )
    print(
        f"1 view (image plane), {args.frames} frames: compiled "
        f"{args.frames / one_s['compiled']:7.1f} frames/s, numpy "
        f"{args.frames / one_s['numpy']:6.1f} frames/s, ratio "
        f"{one_s['numpy'] / one_s['compiled']:.1f}x"
    )
    print("\n| cameras | method | angle error median (deg) | p95 (deg) |")
    print("|---|---|---|---|")
    for n, name, med, p95 in rows:
        print(f"| {n} | {name} | {med:.2f} | {p95:.2f} |")


if __name__ == "__main__":
    main()
