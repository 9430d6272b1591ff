"""Fit a whole session: the solver mapped over time chunks with dask, into a zarr store.

:func:`fit_session` plans one task per time chunk of the output store. A task
(:func:`fit_chunk`, run on a dask worker) reads its frames straight from the tracks store,
plus ``overlap_frames`` frames before them to warm the solver up, solves every individual
separately with :func:`pipeline.solve.solve_sequence`, keeps its own frames, and writes
them with a region write aligned to the store's chunks; the warm-up solve goes to the
seam diagnostic. Only paths and small settings travel in the graph, never arrays.

The store is created up front (metadata only) under a temporary name beside ``out``
(``.<name>.partial``); a chunk is done once its marker is set, so a rerun after a failure
fits only the missing chunks. When every chunk is done the seams are summarized, the
timings written, and the store renamed to ``out``. A complete store whose fingerprint
matches is left alone unless ``force``; when the tracks store's files are untouched since
that fit (:func:`pipeline.provenance.fingerprint.store_signature`), its recorded input digest
is reused instead of reading the tracks again, so skipping costs milliseconds.

Reliability: one run per session at a time (a lock file beside ``out``,
:mod:`pipeline.store.lock`: a second run fails at once with
:class:`~pipeline.errors.SessionLockedError`); a chunk write that fails with a
transient ``OSError`` is retried (:func:`pipeline.store.atomic.retry_io`); failed chunks
are recorded in the partial store's ``failed`` attr; the store is published only when
every chunk's done marker is set; a folder that cannot be written (read-only, full) is one
:class:`~pipeline.errors.FitError` naming it. ``chunk_task`` replaces the function run per
chunk (tests wrap :func:`~pipeline.fit.chunk.fit_chunk` to fail on purpose).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.bodyplan import BodyPlan, body_plan_sha256, load_body_plan
from pipeline.errors import ConfigError, FitError, flag
from pipeline.fit.chunk import ChunkTask, fit_chunk
from pipeline.fit.observed import Observed, confidence_level, observed, warn_if_empty
from pipeline.fit.run import FitReport, SessionJob, current_fit, fit_stores
from pipeline.fit.view_setup import scan_views, view_setup, with_estimated_scale
from pipeline.fit.world_frame import WorldFrame, plan_up_axis, resolve_world_frame, rotate_cameras
from pipeline.provenance import fingerprint as fp
from pipeline.provenance.hashing import json_sha256
from pipeline.solve import CoordinateTasks, SolverConfig
from pipeline.solve.temporal.motion_model import check_fps
from pipeline.solve.temporal.motion_model import overlap_frames as temporal_overlap
from pipeline.store.attrs import store_attrs
from pipeline.store.fit import DEFAULT_OVERLAP_FRAMES, FitLayout
from pipeline.store.lock import session_lock
from pipeline.store.tracks import open_tracks
from pipeline.tracks.mapping import map_keypoints
from pipeline.tracks.scale import check_scale, reference_points

__all__ = ["check_fit_request", "fit_session"]


#: Bytes a file name may have (NAME_MAX of common filesystems), and the most that kinefit
#: adds to the output's name for the files beside it (``.<name>.old-1234abcd``).
NAME_MAX, NAME_EXTRA = 255, 14


def _check_out(out: Path, tracks_path: str) -> None:
    """Refuse to replace anything at ``out`` that is not a kinefit fit store."""
    size = len(out.name.encode())
    if size + NAME_EXTRA > NAME_MAX:
        raise FitError(
            f"{out}: the output name is too long ({size} bytes): the fit is built beside it "
            f"as .{out.name[:20]}....partial and names may have {NAME_MAX} bytes; use a name "
            f"of at most {NAME_MAX - NAME_EXTRA} bytes"
        )
    if out.resolve() == Path(tracks_path):
        raise FitError(f"{out}: the output would overwrite the input tracks store")
    if out.exists() and "fingerprint" not in store_attrs(out):
        raise FitError(
            f"{out}: exists and is not a kinefit fit store; refusing to replace it "
            "(choose another --out or remove it)"
        )


def check_fit_request(
    ds: Any,
    plan: BodyPlan,
    *,
    source: str,
    multiview: str = "direct",
    image_scale: float = 1.0,
    up_axis: str | None = None,
    world_rotation: Any = None,
    keypoint_map: Any = None,
    chunk_frames: int | None = None,
    overlap_frames: int = DEFAULT_OVERLAP_FRAMES,
) -> tuple[Any, WorldFrame, Any, int]:
    """Check a fit's settings against its tracks, before any work (or cluster) starts.

    The arguments are those of :func:`fit_session` (``ds`` the opened tracks store).

    Returns
    -------
    tuple
        The camera views (or None), the world frame, the keypoint mapping and the
        chunk length in frames.

    Raises
    ------
    ConfigError, TracksError, CameraError
        A setting the tracks cannot take, named with its valid values.
    """
    views = view_setup(ds, plan, multiview=multiview, image_scale=image_scale, source=source)
    frame = WorldFrame(None, None)
    if views is None or views.kind == "cameras":  # the image plane is not a world
        frame = resolve_world_frame(
            ds.attrs.get("up_axis"),
            plan_up_axis(plan),
            up_axis=up_axis,
            rotation=world_rotation,
            source=source,
        )
    if views is not None and not frame.identity:
        views = dataclasses.replace(
            views, cameras=tuple(rotate_cameras(views.cameras, frame.matrix))
        )
    mapping = map_keypoints(ds["keypoint"].values, plan.joint_names, keypoint_map, source=source)
    chunk_frames = int(ds["position"].chunks[0][0] if chunk_frames is None else chunk_frames)
    if chunk_frames < 1 or overlap_frames < 0:
        raise ConfigError(
            f"{flag('chunk_frames').rstrip('=')} must be >= 1 and "
            f"{flag('overlap_frames').rstrip('=')} >= 0, got {chunk_frames} and {overlap_frames}"
        )
    return views, frame, mapping, chunk_frames


def fit_session(
    tracks: str | Path,
    plan: BodyPlan | str | Path,
    config: SolverConfig,
    out: str | Path,
    client: Any = None,
    chunk_frames: int | None = None,
    overlap_frames: int = DEFAULT_OVERLAP_FRAMES,
    *,
    force: bool = False,
    keypoint_map: dict[str, str] | str | Path | None = None,
    progress: Callable[[int, int], None] | None = None,
    check_units: bool = True,
    chunk_task: Callable[[ChunkTask], Any] = fit_chunk,
    multiview: str = "direct",
    image_scale: float | None = None,
    up_axis: str | None = None,
    world_rotation: Any = None,
    coordinate_tasks: CoordinateTasks | None = None,
    plan_choice: Mapping[str, Any] | None = None,
) -> FitReport:
    """Fit every individual of a session; write the fit store ``out``.

    Parameters
    ----------
    tracks : str or Path
        Tracks zarr store (:func:`pipeline.store.write_tracks`): 3-D positions, 2-D image
        coordinates (fitted on the image plane), or a multi-view store of pixels with its
        cameras (:mod:`pipeline.tracks.multiview`); see :mod:`pipeline.fit.view_setup`.
    plan : BodyPlan, str or Path
        Body plan or its JSON file.
    config : SolverConfig
    out : str or Path
        Fit store to create.
    client : distributed.Client, optional
        Cluster to run the chunk tasks on; default: one after another in this process.
    chunk_frames : int, optional
        Frames per time chunk and per task; default the tracks store's time chunk.
    overlap_frames : int
        Frames before each chunk solved to warm it up (their disagreement with the
        previous chunk is stored as ``seam_disagreement``). With ``config.temporal=
        "smooth"`` at least :func:`pipeline.solve.temporal.motion_model.overlap_frames`, read on
        both sides of every chunk (the tracks' ``fps`` attr is then required).
    force : bool
        Refit even if ``out`` is current; start over instead of resuming.
    keypoint_map : mapping, str or Path, optional
        Track keypoint -> joint renames, or a YAML file of them.
    progress : callable, optional
        ``progress(done, total)`` after each finished chunk (and once at the start).
    check_units : bool
        Refuse tracks whose size is far from the body plan's (a length-unit mismatch,
        :func:`pipeline.tracks.scale.check_scale`); False skips the check.
    chunk_task : callable
        Run once per chunk as ``chunk_task(ChunkTask)``: :func:`~pipeline.fit.chunk.
        fit_chunk`, or a wrapper of it (it must be picklable for a cluster).
    multiview : {"direct", "triangulate"}
        Multi-view stores: fit every view's pixels at once (default), or the baseline,
        triangulate each keypoint (DLT) and fit the 3D points.
    image_scale : float, optional
        2-D image-plane tracks: the body plan's length per pixel. None (the default)
        estimates it from the session (:mod:`pipeline.calibrate.image_scale`; recorded in
        the store's ``observation`` and ``image_scale_estimate`` attrs).
    up_axis : str, optional
        The tracks' up axis (``"z"``, ``"-y"``, ...), replacing the store's ``up_axis``
        attr; the observations are turned into the body plan's frame when the two differ
        (:mod:`pipeline.fit.world_frame`). Not used for image-plane fits.
    world_rotation : array (3, 3), optional
        A full rotation from the tracks' world to the plan's frame, instead of the
        up-axis rule.
    coordinate_tasks : CoordinateTasks, optional
        Constant per-DOF targets with weights in every frame's objective (an OpenSim IK
        setup's coordinate tasks, :mod:`pipeline.opensim_setup.fit_terms`); part of the
        fingerprint.
    plan_choice : mapping, optional
        How ``body_plan: auto`` chose ``plan`` (:meth:`pipeline.fit.plan_choice.
        PlanChoice.record`): kept as the store's ``body_plan_choice`` attr and part of
        the fingerprint (without it: the fingerprint as before).

    Returns
    -------
    FitReport

    Raises
    ------
    TracksError
        Malformed tracks, no keypoint maps to a joint, an all-NaN session, infinite
        values, unreadable chunks, or tracks in another length unit than the plan;
        nothing is written.
    FitError
        Some chunk tasks failed; the finished ones are kept for a rerun.
    """
    t0 = time.perf_counter()
    tracks_path, out = str(Path(tracks).resolve()), Path(out).absolute()  # workers: other cwd
    ds = open_tracks(tracks_path)
    _check_out(out, tracks_path)
    plan = plan if isinstance(plan, BodyPlan) else load_body_plan(plan)
    views, frame, mapping, chunk_frames = check_fit_request(
        ds,
        plan,
        source=tracks_path,
        multiview=multiview,
        image_scale=image_scale,
        up_axis=up_axis,
        world_rotation=world_rotation,
        keypoint_map=keypoint_map,
        chunk_frames=chunk_frames,
        overlap_frames=overlap_frames,
    )
    if config.temporal == "smooth":  # the smoother reads this far on both sides of a chunk
        fps = check_fps(ds.attrs.get("fps"))
        overlap_frames = max(overlap_frames, temporal_overlap(config.temporal_noise, fps))
    layout = FitLayout(
        time=np.asarray(ds["time"].values, dtype=np.float64),
        individuals=tuple(ds["individual"].values.tolist()),
        joints=plan.joint_names,
        dofs=plan.dof_names,
        chunk_frames=chunk_frames,
        overlap_frames=overlap_frames,
        views=views.views if views else (),
    )
    signature = fp.store_signature(tracks_path)
    settings = config.to_dict()
    if coordinate_tasks is not None and coordinate_tasks.weight:  # without: as before
        settings["coordinate_tasks"] = {
            d: [float(coordinate_tasks.weight[d]), np.asarray(coordinate_tasks.target[d]).tolist()]
            for d in sorted(coordinate_tasks.weight)
        }
    if plan_choice:
        settings["body_plan_choice"] = dict(plan_choice)

    def job(input_sha: str) -> SessionJob:
        plan_sha, pairs = body_plan_sha256(plan), mapping.pairs()
        if not frame.identity:  # a turned world is another fit (identity: fingerprint as before)
            plan_sha = json_sha256([plan_sha, [list(r) for r in frame.rotation]])
        return SessionJob(
            out=out,
            plan=plan,
            config=config,
            tracks_path=tracks_path,
            tracks_attrs=dict(ds.attrs),
            mapping=mapping,
            layout=layout,
            fingerprint=fp.fit_fingerprint(input_sha, plan_sha, settings, pairs),
            input_sha=input_sha,
            signature=signature,
            chunk_task=chunk_task,
            views=views,
            frame=frame,
            coordinate_tasks=coordinate_tasks,
            plan_choice=dict(plan_choice) if plan_choice else None,
        )

    current = store_attrs(out)
    asked = views is None or views.requested(current.get("observation"))
    if (
        not force
        and asked
        and current.get("complete")
        and current.get("tracks_signature") == signature
    ):
        # the tracks' files are untouched since they were scanned: reuse their digest
        quick = job(current.get("input_sha256", ""))
        if current_fit(out, quick.fingerprint) is not None:
            return quick.report(
                t0, skipped=True, chunks_fitted=(), not_converged=current.get("not_converged")
            )
    if views is not None:
        views = with_estimated_scale(views, ds, plan, mapping, config)
    mapped = [k for k in mapping.joint_keypoint if k >= 0]
    joints = [j for j, k in enumerate(mapping.joint_keypoint) if k >= 0]
    if views is not None and views.kind == "cameras":
        seen = observed(ds, mapped, config.min_confidence, tracks_path)
        warn_if_empty(seen, tracks_path, config.min_confidence)
        digest = scan_views(tracks_path, ds, mapped, views, client)
    else:
        reference = reference_points(plan, joints) if check_units and views is None else None
        level = confidence_level(config.min_confidence)
        scan = fp.scan_input(tracks_path, ds, mapped, client, reference, level)
        warn_if_empty(Observed(*scan.seen, level), tracks_path, config.min_confidence)
        check_scale(scan.scale, plan, source=tracks_path, unit=ds.attrs.get("unit"))
        digest = scan.digest if views is None else json_sha256([scan.digest, views.recipe()])
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        with session_lock(out):
            return fit_stores(job(digest), client, force, progress, t0)
    except OSError as exc:
        raise FitError(
            f"{out}: cannot write the fit store in {out.parent}: {exc.strerror or exc}"
            + (f" ({exc.filename})" if exc.filename else "")
            + "; anything already stored there is unchanged"
        ) from exc
