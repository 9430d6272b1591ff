"""Run an OpenSim ``ScaleTool`` setup with kinefit: scale factors, marker placement, model.

:func:`run_scale` does what OpenSim's Scale tool does, with kinefit's kinematics and
solver:

1. the generic model with the setup's marker set (:func:`~.osim_scaling.add_markers`);
2. **scale factors** per body, in the setup's ``scaling_order``: a ``measurements`` step
   sets each measurement's bodies (on its axes) to OpenSim's measurement factor, the mean
   over its marker pairs of the pair's experimental distance (averaged over the frames in
   ``time_range``) over the model's distance at the default pose (kinefit's forward
   kinematics of the imported model); a ``manualScale`` step sets the listed bodies to the
   listed factors. Bodies the model lacks are skipped, as OpenSim skips them;
3. the model scaled (:func:`~.osim_scaling.scale_model`);
4. **marker placement** when the ``MarkerPlacer`` applies: kinefit fits the static pose
   (the trial's frames in the placer's ``time_range`` averaged into one, its ``IKTaskSet``
   weights and coordinate tasks, OpenSim's objective) on the scaled model, then moves each
   marker that is not ``fixed`` to its experimental position, in its body's frame;
5. the model written to the setup's ``output_model_file`` (or ``output``), one file that
   OpenSim and :func:`~pipeline.bodyplan.importers.osim.import_osim` both load, with the
   setup's ``output_scale_file`` (the applied factors) and the placer's
   ``output_motion_file`` (the static pose) when it names them (beside ``output`` when
   given), all written together or none.
"""

from __future__ import annotations

import copy
import tempfile
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from pipeline.bodyplan.engine_config import from_engine_configuration, to_engine_configuration
from pipeline.bodyplan.model import BodyPlan
from pipeline.errors import ConfigError
from pipeline.export.opensim import mot_text
from pipeline.kinematics.fk_jacobian import forward_kinematics
from pipeline.opensim_setup import osim_scaling
from pipeline.opensim_setup.ik_setup import IKSetup
from pipeline.opensim_setup.scale_setup import ScaleSetup, read_scale_setup
from pipeline.store.atomic import atomic_files, write_text_atomic

__all__ = ["ScaleRun", "measurement_factors", "run_scale"]

_SLACK = 1e-9


@dataclass(frozen=True)
class ScaleRun:
    """What :func:`run_scale` computed and wrote.

    Attributes
    ----------
    factors : dict of str to (3,) array
        Every body's applied scale factors (1 where nothing scaled it).
    measured : dict of str to float
        Each applied measurement's factor.
    skipped : tuple of str
        Bodies named by the setup that the model does not have.
    placed : dict of str to float
        Each moved marker's distance (m) from its scaled position to its placed one.
    static_rms : float or None
        RMS (m) of the scaled model's markers against the static pose before placement.
    model_file : Path
    other_files : tuple of Path
        The setup's ``output_scale_file`` and ``output_motion_file`` (the static pose) as
        written.
    """

    factors: dict[str, np.ndarray]
    measured: dict[str, float]
    skipped: tuple[str, ...]
    placed: dict[str, float]
    static_rms: float | None
    model_file: Path
    other_files: tuple[Path, ...] = ()


def _import(root: ET.Element, folder: Path, name: str, source: Path) -> BodyPlan:
    """Import the model under ``root`` (through a file in ``folder``), named ``source``."""
    from pipeline.bodyplan.importers.osim import import_osim

    path = write_text_atomic(folder / name, osim_scaling.model_text(root))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plan = import_osim(path, source=str(source))
    for w in caught:  # once, for the generic model, and without the temporary name
        if name == "generic.osim":
            text = str(w.message).replace(str(path), str(source))
            warnings.warn(text, w.category, stacklevel=2)
    return plan


def _trial(path: Path, time_range: tuple[float, float], setup: ScaleSetup, field: str):
    """``(names, positions (T, M, 3) m)`` of the ``.trc`` frames in ``time_range``."""
    from pipeline.tracks.readers import trc
    from pipeline.tracks.units import unit_factor

    tracks = trc.read(path)
    time = np.asarray(tracks["time"].values, np.float64)
    t0, t1 = time_range
    keep = (time >= t0 - _SLACK) & (time <= t1 + _SLACK)
    if not keep.any():
        raise ConfigError(
            f"{setup.path}: ScaleTool.{field}: {t0} to {t1} s holds no frame of {path} "
            f"({time[0]} to {time[-1]} s)"
        )
    pos = tracks["position"].isel(individual=0, time=np.flatnonzero(keep))
    pos = np.asarray(pos.transpose("time", "keypoint", "space").values, np.float64)
    pos = pos * unit_factor(tracks.attrs.get("unit", "m"), "m", str(path))
    return [str(k) for k in tracks["keypoint"].values], pos, time[keep]


def measurement_factors(
    setup: ScaleSetup, plan: BodyPlan, defaults: dict[str, float]
) -> dict[str, float]:
    """OpenSim's factor of every applied measurement (see the module docstring).

    Raises
    ------
    ConfigError
        A marker pair naming a marker missing from the model or the ``.trc``, or a
        marker the ``.trc`` never sees in the time range.
    """
    if not setup.measurements:
        return {}
    assert setup.scale_marker_file is not None
    names, pos, _ = _trial(setup.scale_marker_file, setup.scale_time_range, setup, "ModelScaler")
    column = {n: i for i, n in enumerate(names)}
    q = from_engine_configuration(plan, defaults).dof_values
    model = np.asarray(forward_kinematics(plan, q), np.float64)
    index = {n: i for i, n in enumerate(plan.joint_names)}
    markers = set((plan.extras or {}).get("x-source", {}).get("markers", index))
    out = {}
    for m in setup.measurements:
        ratios = []
        for k, pair in enumerate(m.pairs):
            field = f"ModelScaler.MeasurementSet.Measurement[{m.name!r}].MarkerPair[{k}].markers"
            for name in pair:
                if name not in markers or name not in index:
                    raise ConfigError(
                        f"{setup.path}: ScaleTool.{field}: no marker {name!r} in the model "
                        f"({setup.model_file} with {setup.marker_set_file}); its markers: "
                        f"{', '.join(sorted(markers))}"
                    )
                if name not in column:
                    raise ConfigError(
                        f"{setup.path}: ScaleTool.{field}: no marker {name!r} in "
                        f"{setup.scale_marker_file}; its markers: {', '.join(names)}"
                    )
            a, b = (pos[:, column[n]] for n in pair)
            d = np.linalg.norm(a - b, axis=-1)
            if not np.isfinite(d).all():
                raise ConfigError(
                    f"{setup.path}: ScaleTool.{field}: {pair[0]!r} or {pair[1]!r} is missing "
                    f"in some frames of {setup.scale_marker_file} in the time range"
                )
            model_d = np.linalg.norm(model[index[pair[0]]] - model[index[pair[1]]])
            ratios.append(float(d.mean()) / float(model_d))
        out[m.name] = float(np.mean(ratios))
    return out


def _factors(setup: ScaleSetup, measured: dict[str, float], bodies: set[str]):
    factors = {b: np.ones(3) for b in bodies}
    skipped: list[str] = []
    for step in setup.scaling_order:
        if step == "measurements":
            for m in setup.measurements:
                for body, axes in m.bodies:
                    if body not in factors:
                        skipped.append(body)
                        continue
                    factors[body][list(axes)] = measured[m.name]
        else:
            for s in setup.manual_scales:
                if s.segment not in factors:
                    skipped.append(s.segment)
                    continue
                factors[s.segment] = np.asarray(s.factors, np.float64)
    return factors, tuple(dict.fromkeys(skipped))


def _coordinates(model_file: Path) -> list[tuple[str, bool, float]]:
    """``(name, rotational, default)`` of every coordinate, as the IK run reads them."""
    import opensim

    model = opensim.Model(str(model_file))  # keep it alive while its set is read
    cs = model.getCoordinateSet()
    return [
        (cs.get(i).getName(), cs.get(i).getMotionType() == 1, float(cs.get(i).getDefaultValue()))
        for i in range(cs.getSize())
    ]


def _static_targets(setup: ScaleSetup, plan: BodyPlan, names: list[str], mean: np.ndarray):
    """Targets ``(1, J, 3)`` m and weights ``(J,)`` of the placer's marker tasks."""
    index = {n: i for i, n in enumerate(plan.joint_names)}
    column = {n: i for i, n in enumerate(names)}
    targets = np.full((1, plan.n_joints, 3), np.nan)
    weights = np.zeros(plan.n_joints)
    for task in setup.marker_tasks:
        field = f"ScaleTool.MarkerPlacer.IKTaskSet.IKMarkerTask[{task.name!r}]"
        if task.name not in index:
            raise ConfigError(
                f"{setup.path}: {field}: no marker {task.name!r} in the model "
                f"({setup.model_file} with {setup.marker_set_file})"
            )
        if task.name not in column:
            raise ConfigError(
                f"{setup.path}: {field}: no marker {task.name!r} in {setup.place_marker_file}; "
                f"its markers: {', '.join(names)}"
            )
        targets[0, index[task.name]] = mean[column[task.name]]
        weights[index[task.name]] = task.weight
    return targets, weights


def _place(setup: ScaleSetup, plan: BodyPlan, model_file: Path, root: ET.Element):
    """New marker locations (body frame, m), moved distances and the static RMS."""
    from pipeline.opensim_setup.ik_run import _tasks, ik_solver_config
    from pipeline.solve import solve_sequence

    assert setup.place_marker_file is not None
    names, pos, time = _trial(
        setup.place_marker_file, setup.place_time_range, setup, "MarkerPlacer"
    )
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a marker never seen: all NaN
        mean = np.nanmean(pos, axis=0)
    targets, weights = _static_targets(setup, plan, names, mean)
    coords = _coordinates(model_file)
    known = {c[0] for c in coords}
    for task in setup.coordinate_tasks:
        if task.name not in known:
            raise ConfigError(
                f"{setup.path}: ScaleTool.MarkerPlacer.IKTaskSet.IKCoordinateTask"
                f"[{task.name!r}]: no coordinate {task.name!r} in {setup.model_file}; "
                f"valid: {', '.join(sorted(known))}"
            )
    ik = replace(
        _IK, path=setup.path, model_file=model_file, coordinate_tasks=setup.coordinate_tasks
    )
    tasks = _tasks(ik, plan, coords, np.zeros(1))
    fit = solve_sequence(
        plan,
        targets,
        config=ik_solver_config(1e-5),
        keypoint_weights=weights,
        coordinate_tasks=tasks,
    )
    q = np.asarray(fit.dof_value, np.float64)
    fk, rot = forward_kinematics(plan, q, return_rotations=True)
    fk, rot = np.asarray(fk[0], np.float64), np.asarray(rot[0], np.float64)
    index = {n: i for i, n in enumerate(plan.joint_names)}
    column = {n: i for i, n in enumerate(names)}
    locations, moved, d2 = {}, {}, []
    for name, (_body, fixed) in osim_scaling.marker_bodies(root).items():
        if name not in column or name not in index or not np.isfinite(mean[column[name]]).all():
            continue
        j = index[name]
        delta = mean[column[name]] - fk[j]
        if weights[j] > 0:
            d2.append(float(delta @ delta))
        if fixed:
            continue
        offset = np.asarray(plan.joints[j].offset_pos, np.float64)
        locations[name] = offset + rot[int(plan.parent_indices[j])].T @ delta
        moved[name] = float(np.linalg.norm(delta))
    values = to_engine_configuration(plan, q)
    assert isinstance(values, dict)
    pose = {n: float(np.degrees(values[n][0]) if rot else values[n][0]) for n, rot, _ in coords}
    static = (float(time[0]), pose)
    return locations, moved, (float(np.sqrt(np.mean(d2))) if d2 else None), static


_IK = IKSetup(
    path=Path("."),
    name="",
    model_file=Path("."),
    marker_file=Path("."),
    coordinate_file=None,
    output_motion_file=Path("."),
    results_directory=Path("."),
    time_range=(0.0, 0.0),
    accuracy=1e-5,
    marker_tasks=(),
    coordinate_tasks=(),
)


def run_scale(setup_path: str | Path, output: str | Path | None = None) -> ScaleRun:
    """Scale and place markers as an OpenSim ``ScaleTool`` setup says; write the model.

    Parameters
    ----------
    setup_path : str or Path
        The setup file (:func:`~pipeline.opensim_setup.scale_setup.read_scale_setup`).
    output : str or Path, optional
        The scaled model to write instead of the setup's ``output_model_file``.

    Returns
    -------
    ScaleRun

    Raises
    ------
    ConfigError
        Setup problems (a missing model, marker set or ``.trc``), a measurement or task
        naming a marker the model or the trial lacks, an empty time range. Nothing is
        written then.
    """
    setup = read_scale_setup(setup_path)
    out = Path(output) if output is not None else setup.output_model_file
    root = ET.parse(setup.model_file).getroot()
    if setup.marker_set_file is not None:
        osim_scaling.add_markers(root, setup.marker_set_file)
    with tempfile.TemporaryDirectory(prefix="kinefit-scale-") as tmp:
        folder = Path(tmp)
        generic = _import(root, folder, "generic.osim", setup.model_file)
        defaults = {n: d for n, _, d in _coordinates(folder / "generic.osim")}
        measured = measurement_factors(setup, generic, defaults) if setup.scale else {}
        bodies = {b.get("name") for b in root.iter("Body")}
        factors, skipped = _factors(setup, measured, bodies)
        scaled = copy.deepcopy(root)
        osim_scaling.scale_model(
            scaled,
            factors,
            preserve_mass_distribution=setup.preserve_mass_distribution,
            subject_mass=setup.mass,
        )
        placed: dict[str, float] = {}
        rms = static = None
        if setup.place:
            plan = _import(scaled, folder, "scaled.osim", out)
            locations, placed, rms, static = _place(setup, plan, folder / "scaled.osim", scaled)
            osim_scaling.set_marker_locations(scaled, locations)
        texts = {out: osim_scaling.model_text(scaled, setup.name)}
    beside = output is not None  # --out: the other files beside it, under their names
    if setup.output_scale_file is not None:
        path = out.parent / setup.output_scale_file.name if beside else setup.output_scale_file
        texts[path] = _scale_set_text(setup.name, factors)
    if setup.output_motion_file is not None and static is not None:
        path = out.parent / setup.output_motion_file.name if beside else setup.output_motion_file
        t, pose = static
        columns = {n: np.array([v]) for n, v in pose.items()}
        texts[path] = mot_text(f"{setup.name} static pose", np.array([t]), columns)
    with atomic_files(*texts) as temps:
        for tmp_path, text in zip(temps, texts.values(), strict=True):
            tmp_path.write_text(text, encoding="utf-8")
    return ScaleRun(factors, measured, skipped, placed, rms, out, tuple(texts)[1:])


def _scale_set_text(name: str, factors: dict[str, np.ndarray]) -> str:
    """OpenSim's ``ScaleSet`` file of the applied factors (``output_scale_file``)."""
    rows = "".join(
        f'\t\t\t<Scale name="">\n\t\t\t\t<scales> {" ".join(repr(float(v)) for v in f)} </scales>'
        f"\n\t\t\t\t<segment>{body}</segment>\n\t\t\t\t<apply>true</apply>\n\t\t\t</Scale>\n"
        for body, f in sorted(factors.items())
    )
    return (
        '<?xml version="1.0" encoding="UTF-8" ?>\n<OpenSimDocument Version="40000">\n'
        f'\t<ScaleSet name="{name}_scaleSet_applied">\n\t\t<objects>\n{rows}'
        "\t\t</objects>\n\t\t<groups />\n\t</ScaleSet>\n</OpenSimDocument>\n"
    )
