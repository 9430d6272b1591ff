"""kinefit against OpenSim's ``InverseKinematicsTool`` on OpenSim's own IK setups, in one run.

Setups (``../shared/data/opensim/``, unchanged from opensim-models): Arm26
(``arm26_Setup_InverseKinematics.xml``: 2 coordinates, 121 frames) and Gait2392 subject01
walk (``subject01_Setup_IK.xml``: 23 coordinates with the knees' tibia translations as
OpenSim's splines of the knee angle, coordinate tasks on the subtalar and mtp angles); and
the large-model case, ``rajagopal``: ``Rajagopal2016.osim`` (``../shared/data/models/osim/``:
37 coordinates, spline-driven knees, coupled patellae, arms; 8 locked) on a synthetic
running trial written for the run (:func:`rajagopal_setup`: its 66 markers from OpenSim's
own forward kinematics of a running-like stride at 50 Hz, plus 5 mm of seeded noise, every
marker task at weight 1, accuracy 1e-5). Both sides fit the same frames (the setup's
``time_range``) on the same machine:

- OpenSim: ``InverseKinematicsTool(setup).run()``, the setup copied to a temporary folder
  with its input paths made absolute and its results sent there; timed end to end (it
  reads the ``.trc``, solves and writes the ``.mot`` and marker errors);
- kinefit: the setup read once (:func:`pipeline.opensim_setup.ik_run.ik_problem`), then
  its fit (``solve_sequence`` with OpenSim's objective: the marker tasks' weights, the
  coordinate tasks, no prior, ``ik_solver_config``'s tolerances) timed for at least
  ``--seconds``; and ``kinefit ik``'s whole :func:`~pipeline.opensim_setup.ik_run.run_ik`
  (import, read, fit, write) timed once, for the end-to-end figure.

Medians over ``--repeats`` repeats, the two sides alternating in each repeat; ratios are
between medians of this run. Beside the speeds: each side's marker errors (RMS and largest
over the frames, from the ``_ik_marker_errors.sto`` each writes) and the weighted marker
error per frame of both computed with OpenSim's forward kinematics from each side's
``.mot`` (what OpenSim minimizes), kinefit's iterations per frame, and the largest angle
difference between the two ``.mot`` files. The compiled kernels are loaded before
anything is timed. One thread (BLAS pools pinned to 1 before numpy loads); OpenSim runs
single-threaded.

Run ``python benchmarks/opensim_ik.py --help``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import xml.etree.ElementTree as ET  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import opensim as osim  # noqa: E402
from _common import SHARED, time_repeated, where_measured  # noqa: E402

from pipeline.kinematics.step_groups import compiled_refusal  # noqa: E402
from pipeline.opensim_setup.ik_run import ik_problem, run_ik  # noqa: E402
from pipeline.solve import solve_sequence  # noqa: E402
from pipeline.tracks.opensim_storage import read_storage  # noqa: E402

DATA = SHARED / "data" / "opensim"
RAJAGOPAL = SHARED / "data" / "models" / "osim" / "Rajagopal2016.osim"
SETUPS = {
    "arm26": DATA / "arm26" / "arm26_Setup_InverseKinematics.xml",
    "gait2392": DATA / "gait2392" / "subject01_Setup_IK.xml",
    "rajagopal": RAJAGOPAL,  # a setup written by rajagopal_setup
}
#: The synthetic running trial of the large-model case: frames, rate (Hz), stride (Hz),
#: marker noise (m, per coordinate).
RUN_FRAMES, RUN_RATE, RUN_STRIDE, RUN_NOISE = 100, 50.0, 1.4, 0.005
#: The speed-up aimed at on Gait2392 with the exact knees.
TARGET_SPEEDUP = {"gait2392": 300.0}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--setups", nargs="+", choices=sorted(SETUPS), default=sorted(SETUPS))
    p.add_argument("--seconds", type=float, default=2.0, help="minimum kinefit span per repeat")
    p.add_argument("--repeats", type=int, default=3)
    return p.parse_args(argv)


def _running(t: np.ndarray) -> dict[str, np.ndarray]:
    """Coordinate trajectories (rad, m) of a running-like stride, inside OpenSim's ranges."""
    w = 2 * np.pi * RUN_STRIDE

    def s(amp, phase=0.0, k=1):
        return amp * np.sin(k * w * t + phase)

    q = {
        "pelvis_tilt": -0.1 + s(0.06, 0, 2), "pelvis_list": s(0.06, 0.3),
        "pelvis_rotation": s(0.15, 0.2), "pelvis_tx": s(0.05, 0, 2),
        "pelvis_ty": 0.94 + s(0.04, 0.5, 2), "pelvis_tz": s(0.02, 0.1),
        "lumbar_extension": -0.1 + s(0.06, 0.4, 2), "lumbar_bending": s(0.06, 1.0),
        "lumbar_rotation": s(0.15, np.pi),
    }  # fmt: skip
    for side, ph in (("r", 0.0), ("l", np.pi)):
        q |= {
            f"hip_flexion_{side}": 0.45 + s(0.6, ph),
            f"hip_adduction_{side}": -0.05 + s(0.1, ph + 1),
            f"hip_rotation_{side}": s(0.12, ph + 0.5),
            f"knee_angle_{side}": 0.9 + s(0.75, ph - 1.2),
            f"ankle_angle_{side}": 0.05 + s(0.3, ph - 0.6),
            f"arm_flex_{side}": s(0.6, ph + np.pi),
            f"arm_add_{side}": -0.2 + s(0.08, ph),
            f"arm_rot_{side}": s(0.15, ph + 0.7),
            f"elbow_flex_{side}": 1.4 + s(0.3, ph + 0.3),
            f"pro_sup_{side}": 0.8 + s(0.3, ph + 1.1),
        }
    return q


def rajagopal_setup(folder: Path) -> Path:
    """Write the large-model case into ``folder``: its ``.trc`` and IK setup (returned).

    The markers are OpenSim's ``getLocationInGround`` along :func:`_running` (the coupled
    coordinates as OpenSim's ``CoordinateCouplerConstraint`` functions give them, the
    locked ones at their defaults) plus :data:`RUN_NOISE` of seeded Gaussian noise.
    """
    folder.mkdir(parents=True, exist_ok=True)
    model = osim.Model(str(RAJAGOPAL))
    state = model.initSystem()
    coords = model.getCoordinateSet()
    couplers = []
    for c in model.getConstraintSet():
        cc = osim.CoordinateCouplerConstraint.safeDownCast(c)
        if cc is not None and c.get_isEnforced():
            dep, ind = cc.getDependentCoordinateName(), cc.getIndependentCoordinateNames()
            couplers.append((dep, ind.get(0), cc.getFunction()))
    time_s = np.arange(RUN_FRAMES) / RUN_RATE
    values = _running(time_s)
    markers = list(model.getMarkerSet())
    xyz = np.zeros((RUN_FRAMES, len(markers), 3))
    for i in range(RUN_FRAMES):
        for name, v in values.items():
            coords.get(name).setValue(state, float(v[i]), False)
        for dep, ind, fn in couplers:
            v = fn.calcValue(osim.Vector(1, coords.get(ind).getValue(state)))
            coords.get(dep).setValue(state, v, False)
        model.realizePosition(state)
        for k, m in enumerate(markers):
            p = m.getLocationInGround(state)
            xyz[i, k] = p.get(0), p.get(1), p.get(2)
    xyz += RUN_NOISE * np.random.default_rng(29).standard_normal(xyz.shape)
    names = [m.getName() for m in markers]
    trc = folder / "running.trc"
    head = [
        f"PathFileType\t4\t(X/Y/Z)\t{trc.name}",
        "DataRate\tCameraRate\tNumFrames\tNumMarkers\tUnits\tOrigDataRate"
        "\tOrigDataStartFrame\tOrigNumFrames",
        f"{RUN_RATE:g}\t{RUN_RATE:g}\t{RUN_FRAMES}\t{len(names)}\tm\t{RUN_RATE:g}\t1\t{RUN_FRAMES}",
        "Frame#\tTime\t" + "\t\t\t".join(names) + "\t\t",
        "\t\t" + "\t".join(f"X{k}\tY{k}\tZ{k}" for k in range(1, len(names) + 1)),
        "",
    ]
    rows = [f"{i + 1}\t{time_s[i]:.6f}\t" + "\t".join(f"{v:.9f}" for v in xyz[i].ravel())
            for i in range(RUN_FRAMES)]  # fmt: skip
    trc.write_text("\n".join(head + rows) + "\n")
    tasks = "".join(
        f'<IKMarkerTask name="{n}"><apply>true</apply><weight>1</weight></IKMarkerTask>'
        for n in names
    )
    setup = folder / "running_Setup_IK.xml"
    setup.write_text(
        f"""<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000"><InverseKinematicsTool name="running">
<results_directory>{folder}</results_directory><model_file>{RAJAGOPAL}</model_file>
<accuracy>1e-005</accuracy>
<IKTaskSet name="running"><objects>{tasks}</objects></IKTaskSet>
<marker_file>{trc}</marker_file><coordinate_file>Unassigned</coordinate_file>
<time_range>0 {time_s[-1]:.6f}</time_range><report_errors>true</report_errors>
<output_motion_file>{folder / "running_ik.mot"}</output_motion_file>
<report_marker_locations>false</report_marker_locations>
</InverseKinematicsTool></OpenSimDocument>
"""
    )
    return setup


def _copy_setup(src: Path, tmp: Path) -> Path:
    """``src`` in ``tmp``: input paths absolute, results in ``tmp``."""
    tree = ET.parse(src)
    tool = tree.getroot().find("InverseKinematicsTool")
    for tag in ("model_file", "marker_file", "coordinate_file"):
        node = tool.find(tag)
        if node is not None and node.text and node.text.strip() not in ("", "Unassigned"):
            node.text = str(src.parent / node.text.strip())
    tool.find("results_directory").text = str(tmp)
    out = tool.find("output_motion_file")
    out.text = str(tmp / Path(out.text.strip()).name)
    path = tmp / src.name
    tree.write(path)
    return path


def _opensim_run(setup: Path) -> float:
    """Seconds of one ``InverseKinematicsTool.run()`` of ``setup``."""
    tool = osim.InverseKinematicsTool(str(setup))
    start = time.perf_counter()
    tool.run()
    return time.perf_counter() - start


def _marker_errors(sto: Path) -> tuple[float, float]:
    """Mean of the per-frame marker RMS and the largest marker error (m) of an errors file."""
    table = read_storage(sto)
    rms = table["value"].sel(coordinate="marker_error_RMS").values
    big = table["value"].sel(coordinate="marker_error_max").values
    return float(np.mean(rms)), float(np.max(big))


def _weighted_error(model_file: Path, motion: Path, problem) -> np.ndarray:
    """``sum_i w_i |marker_i - opensim_fk_i|^2`` (m^2) per frame of ``motion``."""
    model = osim.Model(str(model_file))
    state = model.initSystem()
    cs = model.getCoordinateSet()
    table = read_storage(motion)
    values = table["value"].transpose("time", "coordinate").values
    cols = [str(c) for c in table["coordinate"].values]
    names = problem.plan.joint_names
    used = np.flatnonzero(problem.keypoint_weights > 0)
    markers = model.getMarkerSet()
    out = np.zeros(values.shape[0])
    for t in range(values.shape[0]):
        for j, c in enumerate(cols):
            if cs.contains(c):
                coord = cs.get(c)
                v = values[t, j]
                coord.setValue(state, np.radians(v) if coord.getMotionType() == 1 else v, False)
        model.realizePosition(state)
        for i in used:
            obs = problem.targets[t, i]
            if not np.isfinite(obs).all():
                continue
            p = markers.get(names[i]).getLocationInGround(state)
            d = np.array([p.get(0), p.get(1), p.get(2)]) - obs
            out[t] += problem.keypoint_weights[i] * float(d @ d)
    return out


def _angle_gap(a: Path, b: Path) -> float:
    """Largest absolute difference (deg or m) between two ``.mot`` files' columns."""
    ta, tb = read_storage(a), read_storage(b)
    cols = [str(c) for c in ta["coordinate"].values]
    return max(
        float(np.max(np.abs(ta["value"].sel(coordinate=c).values
                            - tb["value"].sel(coordinate=c).values)))
        for c in cols
    )  # fmt: skip


def measure(name: str, args, tmp: Path) -> dict:
    folder = tmp / name
    src = rajagopal_setup(folder / "trial") if name == "rajagopal" else SETUPS[name]
    (folder / "opensim").mkdir(parents=True)
    (folder / "kinefit").mkdir()
    setup = _copy_setup(src, folder / "opensim")
    problem = ik_problem(setup)
    n = problem.time.size

    def kinefit() -> int:
        fit = solve_sequence(
            problem.plan,
            problem.targets,
            config=problem.config,
            keypoint_weights=problem.keypoint_weights,
            coordinate_tasks=problem.tasks,
        )
        kinefit.iterations = np.asarray(fit.iterations)
        return n

    kinefit()  # warm-up (the compiled kernels are loaded already)
    ko, kf = [], []
    for i in range(args.repeats):
        ko.append(n / _opensim_run(setup))
        kf.append(time_repeated(kinefit, args.seconds))
        print(f"  {name}: repeat {i + 1}/{args.repeats}", file=sys.stderr, flush=True)
    start = time.perf_counter()
    run = run_ik(setup, folder / "kinefit")
    end_to_end = n / (time.perf_counter() - start)
    model_file = problem.setup.model_file
    os_motion = problem.setup.output_motion_file
    os_errors = problem.setup.marker_errors_file
    return {
        "frames": n,
        "coordinates": len(problem.coordinates),
        "opensim_fps": statistics.median(ko),
        "kinefit_fps": statistics.median(kf),
        "kinefit_end_to_end_fps": end_to_end,
        "iterations": float(np.mean(kinefit.iterations)),
        "iterations_max": int(np.max(kinefit.iterations)),
        "opensim_errors": _marker_errors(os_errors),
        "kinefit_errors": _marker_errors(run.errors_file),
        "opensim_weighted": _weighted_error(model_file, os_motion, problem),
        "kinefit_weighted": _weighted_error(model_file, run.motion_file, problem),
        "gap": _angle_gap(run.motion_file, os_motion),
        "engine": "numpy"
        if problem.config.engine == "numpy" or compiled_refusal(problem.plan)
        else "compiled",
    }


def report(args, results: dict) -> str:
    lines = [
        f"kinefit vs OpenSim {osim.__version__} InverseKinematicsTool, same frames, one run",
        where_measured(),
        f"medians of {args.repeats} repeats (kinefit >= {args.seconds:g} s each); one thread",
        "",
        f"{'':34}{'kinefit':>12}{'OpenSim':>12}{'ratio':>10}",
    ]
    for name, r in results.items():
        ratio = r["kinefit_fps"] / r["opensim_fps"]
        lines.append(f"{name} ({r['frames']} frames, {r['coordinates']} coordinates)")
        lines.append(
            f"{'  frames/s (fit)':34}{r['kinefit_fps']:>12.0f}{r['opensim_fps']:>12.1f}"
            f"{ratio:>9.0f}x"
        )
        e2e = r["kinefit_end_to_end_fps"]
        lines.append(
            f"{'  frames/s (kinefit ik end to end)':34}{e2e:>12.0f}{r['opensim_fps']:>12.1f}"
            f"{e2e / r['opensim_fps']:>9.1f}x"
        )
        (kr, km), (orr, om) = r["kinefit_errors"], r["opensim_errors"]
        lines.append(
            f"{'  marker RMS, mean over frames (mm)':34}{1e3 * kr:>12.4f}{1e3 * orr:>12.4f}"
        )
        lines.append(f"{'  largest marker error (mm)':34}{1e3 * km:>12.4f}{1e3 * om:>12.4f}")
        kw, ow = r["kinefit_weighted"], r["opensim_weighted"]
        lines.append(
            f"{'  weighted error/frame, mean (m^2)':34}{kw.mean():>12.3e}{ow.mean():>12.3e}"
        )
        worse = int(np.sum(kw > ow * (1 + 1e-6) + 1e-12))
        lines.append(
            f"  frames where kinefit's weighted error (OpenSim FK) exceeds OpenSim's: {worse} "
            f"of {r['frames']}"
        )
        lines.append(
            f"  kinefit iterations/frame: mean {r['iterations']:.2f}, max "
            f"{r['iterations_max']} (engine {r['engine']}); largest .mot difference "
            f"{r['gap']:.4f} (deg or m)"
        )
        if name in TARGET_SPEEDUP:
            goal = TARGET_SPEEDUP[name]
            verdict = "MET" if ratio >= goal else "NOT MET"
            lines.append(f"  target >= {goal:g}x OpenSim: measured {ratio:.0f}x -> {verdict}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    osim.Logger.setLevelString("error")
    osim.Logger.removeFileSink()  # no opensim.log left in the caller's folder
    from pipeline.solve.compiled import warm_up

    warm_up()
    with tempfile.TemporaryDirectory(prefix="kinefit-opensim-ik-") as tmp:
        results = {name: measure(name, args, Path(tmp)) for name in args.setups}
    print(report(args, results))


if __name__ == "__main__":
    main()
