"""NWB files with ndx-pose pose estimates (needs ``pynwb`` + ``ndx-pose``: extra ``nwb``).

What is read: every ``ndx_pose.PoseEstimation`` in the file's processing modules (or
only those of ``processing_module=``), and every ``MultiCameraPoseEstimation``'s own 3D
series (its per-camera ``PoseEstimation`` children are 2D views of the same points: the
``camera_view`` option reads one of them instead). Each is one individual, named after
its skeleton's subject (``Skeleton.subject.subject_id``), else the file's subject when
there is one estimate, else the estimate's name. Its
``PoseEstimationSeries`` are the keypoints (in the skeleton's node order when the series
are named after the nodes, else in file order): ``data (n_frames, 2 or 3)`` times
``conversion`` plus ``offset`` is the position, ``confidence`` the confidence. When
some series are 2D and others 3D (ndx-pose 0.1 allowed it), the 2D ones have z = NaN.

Time: every series must share one clock. A ``rate`` gives ``fps`` and time
``starting_time + frame / rate``; ``timestamps`` give the time directly and ``fps`` is
estimated as 1 / median step. Unit: the series' ``unit`` in kinefit's spelling
(ndx-pose's ``"pixels"`` is ``"px"``); the up axis is not recorded by ndx-pose: None
(unknown). The series' ``reference_frame`` text goes to attrs.

ndx-pose versions: files written with ndx-pose < 0.4 may link one PoseEstimation to
several cameras, which ndx-pose 0.4 refuses to read; the reader reads them anyway
(the cameras' names go to attrs ``cameras``), so every version from 0.1 on reads. The
file is read with the installed ndx-pose's classes, without loading the namespace
cached in the file (no "cached namespace" warning).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import xarray as xr

from pipeline.errors import reader_option
from pipeline.tracks.readers.reader_helpers import fail, is_hdf5, missing_extra, resolve_fps
from pipeline.tracks.schema import make_tracks_dataset
from pipeline.tracks.units import canonical_unit

FORMAT = "nwb"
SUFFIXES = (".nwb",)
SOFTWARE = "NWB"


def _individual_name(pe, nwbfile, n_estimates: int) -> str:
    skeleton = getattr(pe, "skeleton", None)
    subject = getattr(skeleton, "subject", None) if skeleton is not None else None
    if subject is not None and getattr(subject, "subject_id", None):
        return str(subject.subject_id)
    if n_estimates == 1 and nwbfile.subject is not None and nwbfile.subject.subject_id:
        return str(nwbfile.subject.subject_id)
    return str(pe.name)


def _clock(path: Path, series) -> tuple[np.ndarray, float | None, int]:
    """Return (time, rate or None, n_frames) of one PoseEstimationSeries."""
    n = int(series.data.shape[0])
    if series.rate is not None:
        start = float(series.starting_time or 0.0)
        return start + np.arange(n) / float(series.rate), float(series.rate), n
    if series.timestamps is None:
        raise fail(path, f"series {series.name!r} has neither rate nor timestamps")
    stamps = np.asarray(series.timestamps[()], dtype=np.float64)
    if stamps.shape != (n,):
        raise fail(path, f"series {series.name!r}: {stamps.size} timestamps for {n} frames")
    return stamps, None, n


def _views(path: Path, multi, camera_view: str | None) -> list:
    """The estimates a MultiCameraPoseEstimation contributes: its 3D series or one view."""
    views = dict(multi.pose_estimations or {})
    if camera_view is not None:
        if camera_view not in views:
            raise fail(
                path,
                f"option 'camera_view': {camera_view!r} is not a camera view of "
                f"{multi.name!r}; its views: {sorted(views)}",
            )
        return [views[camera_view]]
    if multi.pose_estimation_series:
        return [multi]
    raise fail(
        path,
        f"MultiCameraPoseEstimation {multi.name!r} has no 3D series; pass "
        f"{reader_option('camera_view', 'NAME')} to read one of its views: {sorted(views)}",
    )


def _estimates(path: Path, nwbfile, processing_module: str | None, camera_view: str | None):
    from ndx_pose import MultiCameraPoseEstimation, PoseEstimation

    modules = nwbfile.processing
    if processing_module is not None:
        if processing_module not in modules:
            raise fail(
                path,
                f"no processing module {processing_module!r}; modules: {sorted(modules)}",
            )
        modules = {processing_module: modules[processing_module]}
    found, multi = [], False
    for module in modules.values():
        for obj in module.data_interfaces.values():
            if isinstance(obj, MultiCameraPoseEstimation):
                found.extend(_views(path, obj, camera_view))
                multi = True
            elif isinstance(obj, PoseEstimation):
                found.append(obj)
    if camera_view is not None and not multi:
        raise fail(
            path,
            f"option 'camera_view': {camera_view!r}: the file has no MultiCameraPoseEstimation "
            f"to pick a view of; its pose estimates ({sorted(pe.name for pe in found)}) are "
            "all read, leave camera_view out",
        )
    if not found:
        raise fail(
            path,
            "no ndx-pose PoseEstimation in the processing module(s) "
            f"{sorted(modules)}; nothing to read",
        )
    return found


def _manager():
    """A pynwb build manager whose PoseEstimation mapper accepts several cameras.

    ndx-pose 0.4's mapper raises on a PoseEstimation written by ndx-pose < 0.4 that links
    two cameras; this one keeps the first as ``device`` (the pose data do not depend on
    it). The installed ndx-pose classes are used, so the file's cached namespace is not
    loaded.
    """
    import pynwb
    from hdmf.build import BuildManager, ObjectMapper
    from ndx_pose import PoseEstimation
    from ndx_pose.io.pose import PoseEstimationMap
    from pynwb.device import Device
    from pynwb.io.core import NWBContainerMapper

    class AnyCamerasMap(PoseEstimationMap):
        @NWBContainerMapper.constructor_arg("device")
        def device(self, builder, manager):
            links = [
                link
                for link in builder.links.values()
                if issubclass(manager.get_cls(link.builder), Device)
            ]
            if len(links) > 1:
                return manager.construct(links[0].builder)
            return getattr(ObjectMapper, "NO_OVERRIDE", None)

    type_map = pynwb.get_type_map()
    type_map.register_map(PoseEstimation, AnyCamerasMap)
    return BuildManager(type_map)


def _cameras(path: Path, processing_module: str | None) -> list[str]:
    """Names of the Device objects the file's PoseEstimation groups link (h5py)."""
    import h5py

    names: set[str] = set()
    with h5py.File(path, "r") as handle:
        modules = handle.get("processing", {})
        for module_name in modules:
            if processing_module is not None and module_name != processing_module:
                continue
            for group in modules[module_name].values():
                if not isinstance(group, h5py.Group):
                    continue
                for key in group:
                    link = group.get(key, getlink=True)
                    if isinstance(link, h5py.SoftLink) and "/devices/" in link.path:
                        names.add(link.path.rsplit("/", 1)[-1])
    return sorted(names)


def parse(
    path: str | Path, *, processing_module: str | None = None, camera_view: str | None = None
) -> dict:
    """Read the pose estimates of an NWB file into arrays.

    Returns
    -------
    dict
        ``position (n_frames, n_space, n_keypoints, n_individuals)``, ``confidence``,
        ``keypoints``, ``individuals``, ``time``, ``rate`` (or None), ``unit``,
        ``reference_frame``, ``source_software``, ``cameras``.
    """
    path = Path(path)
    try:
        import ndx_pose  # noqa: F401
        import pynwb
    except ImportError:
        raise missing_extra(path, "NWB", "nwb", "pynwb, ndx-pose") from None
    try:
        with pynwb.NWBHDF5IO(str(path), mode="r", manager=_manager()) as io:
            nwbfile = io.read()
            estimates = _estimates(path, nwbfile, processing_module, camera_view)
            out = _collect(path, nwbfile, estimates)
        out["cameras"] = _cameras(path, processing_module)
        return out
    except OSError as err:
        raise fail(path, f"not a readable NWB file (truncated or corrupt?): {err}") from None
    except (KeyError, ValueError, TypeError) as err:
        if str(err).startswith(str(path)):
            raise
        raise fail(path, f"not a readable NWB file ({type(err).__name__}: {err})") from None


def _collect(path: Path, nwbfile, estimates: list) -> dict:
    individuals, per_individual, clocks, units, frames, software = [], [], [], set(), set(), set()
    for pe in estimates:
        series = dict(pe.pose_estimation_series)
        nodes = list(pe.skeleton.nodes[()]) if getattr(pe, "skeleton", None) else []
        nodes = [n.decode() if isinstance(n, bytes) else str(n) for n in nodes]
        order = nodes if nodes and set(nodes) == set(series) else list(series)
        per_individual.append([(name, series[name]) for name in order])
        individuals.append(_individual_name(pe, nwbfile, len(estimates)))
        software.add(str(pe.source_software or "unknown"))
        for name, s in per_individual[-1]:
            clocks.append(_clock(path, s))
            units.add(str(s.unit))
            frames.add(str(s.reference_frame))
            if s.data.ndim != 2 or s.data.shape[1] not in (2, 3):
                raise fail(path, f"series {name!r}: data shape {s.data.shape}, expected (T, 2|3)")
    time, rate, n_frames = clocks[0]
    for other_time, _, n in clocks[1:]:
        if n != n_frames or not np.allclose(other_time, time, rtol=0, atol=1e-9):
            raise fail(path, "pose estimation series do not share one clock (rate/timestamps)")
    dims = {s.data.shape[1] for group in per_individual for _, s in group}
    if len(units) > 1:
        raise fail(path, f"series have different units {sorted(units)}")
    n_space = max(dims)  # 2D series among 3D ones (ndx-pose 0.1 files) get z = NaN
    if len(dims) > 1:
        flat = [(name, s.data.shape[1]) for group in per_individual for name, s in group]
        warnings.warn(
            f"{path}: mixed 2D and 3D pose estimation series: 3D "
            f"{[n for n, d in flat if d == 3]}, 2D {[n for n, d in flat if d == 2]}; read as "
            "3D, the 2D series' z is missing (NaN)",
            UserWarning,
            stacklevel=2,
        )
    if len(set(individuals)) != len(individuals):
        raise fail(path, f"several pose estimates map to the same individual {individuals}")
    keypoints = list(dict.fromkeys(name for group in per_individual for name, _ in group))
    position = np.full((n_frames, n_space, len(keypoints), len(individuals)), np.nan)
    confidence = np.full((n_frames, len(keypoints), len(individuals)), np.nan)
    for i, group in enumerate(per_individual):
        for name, s in group:
            k = keypoints.index(name)
            data = np.asarray(s.data[()], dtype=np.float64)
            position[:, : data.shape[1], k, i] = data * float(s.conversion) + float(s.offset or 0.0)
            if s.confidence is not None:
                confidence[:, k, i] = np.asarray(s.confidence[()], dtype=np.float64)
    return {
        "position": position,
        "confidence": confidence,
        "keypoints": keypoints,
        "individuals": individuals,
        "time": time,
        "rate": rate,
        "unit": canonical_unit(units.pop()),
        "reference_frame": "; ".join(sorted(frames)),
        "source_software": ", ".join(sorted(software)),
    }


def _estimated_fps(path: Path, time: np.ndarray) -> float | None:
    steps = np.diff(time)
    if steps.size == 0:
        return None
    if np.any(steps <= 0):
        raise fail(path, "timestamps are not strictly increasing")
    return float(1.0 / np.median(steps))


def sniff(path: str | Path) -> bool:
    """Return True for an HDF5 file with an ``nwb_version`` root attribute."""
    if not is_hdf5(path):
        return False
    import h5py

    try:
        with h5py.File(path, "r") as handle:
            return "nwb_version" in handle.attrs
    except OSError:
        return False


def read(
    path: str | Path,
    *,
    fps: float | None = None,
    processing_module: str | None = None,
    camera_view: str | None = None,
) -> xr.Dataset:
    """Read the ndx-pose pose estimates of an NWB file.

    Parameters
    ----------
    path : str or Path
        The ``.nwb`` file.
    fps : float, optional
        Used only when the file has a single frame and no rate.
    processing_module : str, optional
        Only read estimates of this module (default: all modules).
    camera_view : str, optional
        Read this per-camera PoseEstimation of a MultiCameraPoseEstimation instead of its
        3D series.

    Returns
    -------
    xarray.Dataset
        One individual per estimate; ``position (time, space, keypoint, individual)`` in
        the series' unit, ``confidence``, ``time`` in seconds.

    Raises
    ------
    TracksError
        Unreadable file, no PoseEstimation, series on different clocks, mixed 2D/3D or
        units, an unknown ``camera_view``; also when the ``nwb`` extra is missing.
    """
    path = Path(path)
    if not is_hdf5(path):
        raise fail(path, "not an HDF5 file (NWB files are HDF5)")
    arrays = parse(path, processing_module=processing_module, camera_view=camera_view)
    file_rate = arrays["rate"] or _estimated_fps(path, arrays["time"])
    rate = resolve_fps(path, SOFTWARE, file_rate, fps)
    return make_tracks_dataset(
        arrays["position"],
        arrays["confidence"],
        keypoints=arrays["keypoints"],
        individuals=arrays["individuals"],
        fps=rate,
        time=arrays["time"],
        space=("x", "y", "z")[: arrays["position"].shape[1]],
        source_software=arrays["source_software"],
        source_file=path,
        unit=arrays["unit"],
        extra_attrs={
            "source_format": FORMAT,
            "reference_frame": arrays["reference_frame"],
            "fps_estimated": arrays["rate"] is None,
            "cameras": arrays["cameras"],
        },
    )
