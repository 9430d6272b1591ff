"""NWB export: fitted keypoints (ndx-pose) and joint angles, one file per individual.

``pip install 'kinefit[nwb]'`` (pynwb, ndx-pose). NWB holds one subject per file, so a fit
with several individuals gives ``<stem>.<individual>.nwb`` each. In the processing module
``behavior``:

- a ``PoseEstimation`` (ndx-pose) named ``PoseEstimation`` (``KinefitPoseEstimation`` when
  the session file already has one, e.g. the tracker's), one ``PoseEstimationSeries`` per
  keypoint (``data (time, 3)`` in the fit's length unit, ``timestamps`` in seconds, no
  confidence: these are fitted positions), and its ``Skeleton`` (the plan's joints as
  nodes, parent-child edges) in the module's ``Skeletons``;
- a ``TimeSeries`` ``JointAngles`` (``data (time, angle)`` in degrees or radians) of the
  named angles (:func:`pipeline.bodyplan.angles.joint_angles`), its columns and their
  conventions listed in ``description`` and ``comments``.

Provenance (session, body plan name and sha256, solver config, fit fingerprint, kinefit
version) goes into the ``description`` fields. ``session_file``: an existing NWB file of
the session to add to (copied, never modified in place); it must be the fit's session
(its ``session_id`` or ``identifier`` equals the fit's ``session``), else nothing is
written. movement reads the result with ``movement.io.load_poses.from_nwb_file``.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path
from typing import Any, Literal

import numpy as np
import xarray as xr

from pipeline.bodyplan import BodyPlan, body_plan_sha256
from pipeline.bodyplan.angles import joint_angles
from pipeline.errors import ExportError
from pipeline.export.common import (
    Output,
    frame_rate,
    length_unit,
    pick_individuals,
    split_by_individual,
    written_by,
)
from pipeline.export.observability import unobserved_note

#: The format contract's declaration (:mod:`pipeline.formats.contract`).
FORMAT = "nwb"
SUFFIXES = (".nwb",)
SUMMARY = "NWB: ndx-pose keypoints, angles"
sniff = written_by(FORMAT)

__all__ = ["outputs"]

MODULE = "behavior"


def _pynwb():
    try:
        import ndx_pose
        import pynwb
    except ImportError:
        raise ExportError(
            "nwb export needs pynwb and ndx-pose: pip install 'kinefit[nwb]'"
        ) from None
    return pynwb, ndx_pose


def provenance(fit: xr.Dataset, plan: BodyPlan) -> str:
    """One paragraph naming the session, plan, solver settings and fingerprints."""
    solver = fit.attrs.get("solver_config")
    return (
        f"kinefit fit of session {fit.attrs.get('session')!r}: body plan "
        f"{plan.name or plan.source!r} (sha256 {body_plan_sha256(plan)}), "
        f"solver config {json.dumps(solver, sort_keys=True) if solver else 'unknown'}, "
        f"fit fingerprint {fit.attrs.get('fingerprint')}, kinefit "
        f"{fit.attrs.get('kinefit_version')}, fitted {fit.attrs.get('created') or ''}".strip()
    )


def _check_session(session_file: Path, fit: xr.Dataset) -> None:
    pynwb, _ = _pynwb()
    session = fit.attrs.get("session")
    try:
        with pynwb.NWBHDF5IO(str(session_file), mode="r") as io:
            nwb = io.read()
            ids = {nwb.session_id, nwb.identifier}
    except Exception as exc:  # noqa: BLE001 - pynwb/h5py raise many kinds
        raise ExportError(f"nwb export: {session_file}: not a readable NWB file ({exc})") from None
    if session not in ids:
        raise ExportError(
            f"nwb export: {session_file} is of session {nwb.session_id or nwb.identifier!r} "
            f"(session_id {nwb.session_id!r}, identifier {nwb.identifier!r}), not the fit's "
            f"session {session!r}; give that session's NWB file or none"
        )


def _content(fit: xr.Dataset, plan: BodyPlan, name: str, angles: xr.DataArray | None) -> dict:
    fps = frame_rate(fit, "nwb export")
    time = np.asarray(fit["time"].values, dtype=np.float64)
    if str(fit.attrs.get("time_unit") or "").startswith("frame"):
        time = time / fps
    position = fit["fitted_position"].sel(individual=name).transpose("time", "keypoint", "space")
    return {
        "individual": name,
        "time": time,
        "keypoints": [str(k) for k in fit["keypoint"].values],
        "position": np.asarray(position.values, dtype=np.float64),
        "unit": length_unit(fit),
        "up_axis": fit.attrs.get("up_axis"),
        "provenance": " ".join(filter(None, [provenance(fit, plan), unobserved_note(fit)])),
        "session": str(fit.attrs.get("session") or name),
        "edges": [(j, int(p)) for j, p in enumerate(plan.parent_indices) if p >= 0],
        "plan_name": plan.name or "body plan",
        "angles": None if angles is None else angles.sel(individual=name),
    }


def _add(nwb: Any, content: dict, pynwb: Any, ndx_pose: Any) -> None:
    module = nwb.processing.get(MODULE) or nwb.create_processing_module(
        name=MODULE, description="processed behavioral data"
    )
    taken = set(module.data_interfaces)
    pose_name = "PoseEstimation" if "PoseEstimation" not in taken else "KinefitPoseEstimation"
    if pose_name in taken or "JointAngles" in taken:
        raise ExportError(
            f"nwb export: the session file already holds kinefit's {pose_name} / JointAngles; "
            "export into a copy made before"
        )
    skeletons = module.data_interfaces.get("Skeletons")
    if skeletons is None:
        skeletons = ndx_pose.Skeletons(skeletons=[])
        module.add(skeletons)
    skeleton = ndx_pose.Skeleton(
        name=f"kinefit_{content['plan_name']}".replace("/", "_"),
        nodes=content["keypoints"],
        edges=np.array(
            content["edges"], dtype=np.uint8 if len(content["keypoints"]) < 256 else np.uint16
        ),
        subject=nwb.subject,
    )
    skeletons.add_skeletons(skeleton)
    frame = f"kinefit world frame of the fit (up axis {content['up_axis'] or 'unknown'})"
    series: list[Any] = []
    for i, k in enumerate(content["keypoints"]):
        series.append(
            ndx_pose.PoseEstimationSeries(
                name=k,
                description=f"fitted position of joint {k!r}",
                data=content["position"][:, i],
                unit=content["unit"],
                reference_frame=frame,
                timestamps=series[0] if series else content["time"],
            )
        )
    module.add(
        ndx_pose.PoseEstimation(
            name=pose_name,
            pose_estimation_series=series,
            description=content["provenance"],
            source_software="kinefit",
            scorer="kinefit",
            skeleton=skeleton,
        )
    )
    angles = content["angles"]
    if angles is not None:
        names = [str(a) for a in angles["angle"].values]
        conventions = angles.attrs.get("convention", [])
        module.add(
            pynwb.TimeSeries(
                name="JointAngles",
                data=np.asarray(angles.transpose("time", "angle").values, dtype=np.float64),
                unit="degrees" if angles.attrs.get("units") == "deg" else "radians",
                timestamps=series[0],
                description="named joint angles (columns): "
                + ", ".join(names)
                + ". "
                + content["provenance"],
                comments="; ".join(f"{n}: {c}" for n, c in zip(names, conventions, strict=False)),
            )
        )


def _write(tmp: Path, content: dict, session_file: Path | None) -> None:
    pynwb, ndx_pose = _pynwb()
    if session_file is not None:
        shutil.copyfile(session_file, tmp)
        with pynwb.NWBHDF5IO(str(tmp), mode="a") as io:
            nwb = io.read()
            _add(nwb, content, pynwb, ndx_pose)
            io.write(nwb)
        return
    nwb = pynwb.NWBFile(
        session_description=content["provenance"],
        identifier=content["individual"],
        session_start_time=dt.datetime.now(dt.UTC),
        session_id=content["session"],
        subject=pynwb.file.Subject(subject_id=content["individual"], species="unknown"),
    )
    _add(nwb, content, pynwb, ndx_pose)
    with pynwb.NWBHDF5IO(str(tmp), mode="w") as io:
        io.write(nwb)


def outputs(
    fit: xr.Dataset,
    plan: BodyPlan,
    out: Path,
    *,
    individual: str | None = None,
    angles: Literal["deg", "rad", "none"] = "deg",
    session_file: str | Path | None = None,
) -> list[Output]:
    """The NWB files of a fit (one per individual).

    Parameters
    ----------
    fit : xarray.Dataset
    plan : BodyPlan
    out : Path
    individual : str, optional
    angles : {"deg", "rad", "none"}
        Unit of the ``JointAngles`` series, or ``none`` to leave it out.
    session_file : str or Path, optional
        Existing NWB file of the session to add to (one individual only).

    Returns
    -------
    list of Output

    Raises
    ------
    ExportError
        pynwb missing, a session file of another session (or unreadable), several
        individuals with a session file, unknown ``angles``.
    """
    _pynwb()
    if angles not in ("deg", "rad", "none"):
        raise ExportError(f"nwb export: angles {angles!r}; valid: deg, rad, none")
    names = pick_individuals(fit, individual, "nwb export")
    source = None if session_file is None else Path(session_file)
    if source is not None:
        if not source.is_file():
            raise ExportError(f"nwb export: session file {source} does not exist")
        if len(names) > 1:
            raise ExportError(
                f"nwb export: a session file holds one subject; choose an individual of "
                f"{', '.join(names)}"
            )
        _check_session(source, fit)
    table = None if angles == "none" else joint_angles(fit, plan, unit=angles)
    result = []
    for name, path in split_by_individual(out, names):
        content = _content(fit, plan, name, table)
        result.append(Output(path, lambda tmp, c=content: _write(tmp, c, source)))
    return result
