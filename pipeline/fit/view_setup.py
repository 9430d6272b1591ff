"""2D sessions in a session fit: through calibrated cameras, or on the image plane.

A :class:`ViewSetup` says how a 2D tracks store is observed and is what a chunk task
needs to fit it (it travels in the task, small and picklable):

* ``kind="cameras"``: a multi-view store (:mod:`pipeline.tracks.multiview`, one or more
  calibrated cameras). ``multiview="direct"`` fits the skeleton to every view's pixels
  at once (:class:`~pipeline.solve.mappers.CalibratedCameras`; the cold start
  triangulates the keypoints two views see and fits the root rigidly to them);
  ``multiview="triangulate"`` is the baseline: DLT per keypoint
  (:func:`pipeline.cameras.triangulate`, weighted by confidence, >= 2 views), then the
  3D fit of the triangulated points.
* ``kind="image"``: plain 2D tracks (one camera, no calibration): the image plane is the
  world's XY plane (:class:`~pipeline.solve.XYView`), pixels times ``image_scale`` (the
  body plan's length per pixel). Unless the user gives it, the scale is estimated from
  the session's pixels (:func:`with_estimated_scale`, :mod:`pipeline.calibrate.image_scale`;
  depth is unobservable from one view, and the store says so). The image's y axis points
  down, so the world frame is mirrored: left and right swap against a right-handed view
  from above. The fitted positions are plan lengths; the residuals (``residual``,
  ``rms_error``, ``max_error``, ``reprojection_error``) are pixels, as in every 2D fit
  that compares pixels, so a reader needs no scale to read them.

DOFs one view cannot determine are flagged: :func:`observability` is the column norm of
the observation Jacobian per coordinate at the plan's neutral pose (root position, root
rotation increments, then the DOFs), observable when above 1e-6 of the largest. The fit
store records it in the attrs ``view_observable`` (coordinate name -> bool) and
``unobservable`` (their names), beside the solver's per-frame ``dof_observable``
variable; the neutral prior (and the LM damping, for the root) holds the unobservable
ones.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import xarray as xr

from pipeline.bodyplan import BodyPlan
from pipeline.calibrate.image_scale import session_image_scale
from pipeline.cameras import Camera, pack, project, triangulate
from pipeline.cameras.view_selection import ViewSelection, best_views
from pipeline.cluster import run_tasks
from pipeline.errors import ConfigError, TracksError, flag
from pipeline.kinematics.fk_jacobian import jacobian
from pipeline.provenance.fingerprint import BlockDigest, block_ranges, combine_digests
from pipeline.provenance.hashing import json_sha256, new_digest
from pipeline.solve import CoordinateTasks, FitResult, SolverConfig, XYView, solve_sequence
from pipeline.solve.mappers import CalibratedCameras
from pipeline.store.tracks import read_frames
from pipeline.tracks.confidence import confidence_weights
from pipeline.tracks.mapping import KeypointMapping
from pipeline.tracks.multiview import (
    MULTIVIEW_CONFIDENCE_DIMS,
    MULTIVIEW_DIMS,
    is_multiview,
    session_cameras,
)
from pipeline.tracks.schema import CONFIDENCE_DIMS, DIMS

__all__ = [
    "MULTIVIEW_MODES",
    "ViewSetup",
    "observability",
    "scan_views",
    "view_setup",
    "with_estimated_scale",
]

MULTIVIEW_MODES = ("direct", "triangulate")
#: Relative column norm under which a coordinate counts as unobservable.
OBSERVABLE_RTOL = 1e-6


@dataclass(frozen=True)
class ViewSetup:
    """How a 2D session is observed (see the module docstring).

    Attributes
    ----------
    kind : {"cameras", "image"}
    views : tuple of str
        View names (``("image",)`` for the image plane).
    cameras : tuple of Camera
        One per view (``kind="cameras"``).
    multiview : {"direct", "triangulate"}
    image_scale : float or None
        Length per pixel (``kind="image"``); None until it is estimated.
    observable : tuple of (str, bool)
        :func:`observability` of the plan through these views.
    scale_source : {"given", "estimated", "default"}
        Where ``image_scale`` came from: the user, the estimate, or 1 because nothing in
        the session measures a size (no frame sees two joints).
    scale_estimate : tuple of (str, object)
        The estimate's record (:class:`pipeline.calibrate.image_scale.ImageScale`).
    selection : ViewSelection or None
        The views a keypoint is fitted from per frame (``kind="cameras"``; the tracks
        store's ``view_selection`` attr, :mod:`pipeline.cameras.view_selection`); None:
        every detection.
    """

    kind: Literal["cameras", "image"]
    views: tuple[str, ...]
    cameras: tuple[Camera, ...] = ()
    multiview: Literal["direct", "triangulate"] = "direct"
    image_scale: float | None = 1.0
    observable: tuple[tuple[str, bool], ...] = ()
    scale_source: str = "given"
    scale_estimate: tuple[tuple[str, Any], ...] = ()
    selection: ViewSelection | None = None

    @property
    def dims(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Dim order to read ``position`` and ``confidence`` in."""
        if self.kind == "cameras":
            return MULTIVIEW_DIMS, MULTIVIEW_CONFIDENCE_DIMS
        return DIMS, CONFIDENCE_DIMS

    def recipe(self) -> dict[str, Any]:
        """What shapes the fit besides the tracks' values (goes into the fingerprint).

        The image plane's record says ``residuals: "px"``: its residuals are stored in
        pixels (stores from before that held plan lengths, and are refitted).
        """
        return {
            "kind": self.kind,
            "views": list(self.views),
            "cameras": [c.to_dict() for c in self.cameras],
            "multiview": self.multiview if self.kind == "cameras" else None,
            **({"view_selection": self.selection.to_dict()} if self.selection else {}),
            "image_scale": self.image_scale if self.kind == "image" else None,
            **(
                {"image_scale_source": self.scale_source, "residuals": "px"}
                if self.kind == "image"
                else {}
            ),
        }

    def requested(self, stored: Any) -> bool:
        """Whether a fit store's ``observation`` attr is what this setup asks for.

        A given scale must be the stored one; an estimate is the stored estimate (it is
        a function of the tracks, the plan and the solver settings, all fingerprinted).
        An image-plane store without ``residuals: "px"`` in its record holds its
        residuals in plan lengths (pixels times the scale): it is refitted.
        """
        if self.kind != "image":
            return True
        if not isinstance(stored, dict) or stored.get("residuals") != "px":
            return False
        source = stored.get("image_scale_source", "given")
        if self.image_scale is None:
            return source in ("estimated", "default")
        return source == "given" and stored.get("image_scale") == self.image_scale

    def attrs(self) -> dict[str, Any]:
        """Fit store attrs: the setup and the per-coordinate observability."""
        out = {
            "observation": self.recipe(),
            "view_observable": dict(self.observable),
            "unobservable": [name for name, ok in self.observable if not ok],
        }
        if self.kind == "image":
            out["image_scale_estimate"] = dict(self.scale_estimate) or None
        return out

    def units(self, plan_unit: str | None) -> dict[str, str]:
        """Fit store attrs naming the units: ``unit`` (3-D positions), ``residual_unit``.

        The 3-D length unit of a camera session is its extrinsics' (else the plan's); of
        the image plane, the plan's (else pixels when one plan length is one pixel). The
        residuals are pixels except for a triangulated fit, which compares 3-D points.
        The tracks' own unit (pixels) is kept as ``tracks_unit``.
        """
        if self.kind == "cameras":
            unit = self.cameras[0].unit if self.cameras else "unknown"
            unit = unit if unit and unit != "unknown" else (plan_unit or "unknown")
            residual = unit if self.multiview == "triangulate" else "px"
        else:
            unit = plan_unit or ("px" if self.image_scale == 1.0 else "unknown")
            residual = "px"
        return {"unit": unit, "residual_unit": residual, "tracks_unit": "px"}

    def solve(
        self,
        plan: BodyPlan,
        config: SolverConfig,
        mapping: KeypointMapping,
        position: np.ndarray,
        confidence: np.ndarray,
        fps: float | None = None,
        coordinate_tasks: CoordinateTasks | None = None,
    ) -> tuple[FitResult, np.ndarray]:
        """Fit one individual's frames.

        Parameters
        ----------
        position : (T, V, 2, K) or, image plane, (T, 2, K) array
            Pixels of the track keypoints.
        confidence : (T, V, K) or (T, K) array
        fps : float, optional
            Frame rate (Hz), for ``config.temporal="smooth"``.
        coordinate_tasks : CoordinateTasks, optional
            Per-DOF targets with weights (an OpenSim IK setup's coordinate tasks).

        Returns
        -------
        result : FitResult
            Its ``residual``, ``rms_error`` and ``max_error`` in pixels (as the store's
            ``residual_unit`` says), the image plane's too: the solver compares pixels
            times ``image_scale``, and they are divided by it again; positions and the
            ``objective`` stay in the solver's (plan) units.
        reprojection : (T, V, J) array
            Pixel distance of each fitted joint's projection to its detection (NaN where
            not detected; the views the selection left out are measured too).
        """
        if self.kind == "image":
            pix = mapping.gather(position, axis=2).transpose(0, 2, 1)[:, None]  # (T, 1, J, 2)
            weights = confidence_weights(mapping.gather(confidence, axis=1)[:, None], pix)
            scale = float(self.image_scale)
            result = solve_sequence(
                plan, pix[:, 0] * scale, weights[:, 0], config, mapper=XYView(), fps=fps,
                coordinate_tasks=coordinate_tasks,
            )  # fmt: skip
            predicted = result.fitted_position[:, None, :, :2] / scale
            result = dataclasses.replace(  # the solver compared plan lengths: back to pixels
                result,
                residual=result.residual / scale,
                rms_error=result.rms_error / scale,
                max_error=result.max_error / scale,
            )
        else:
            pix = mapping.gather(position, axis=3).transpose(0, 1, 3, 2)  # (T, V, J, 2)
            detected = confidence_weights(mapping.gather(confidence, axis=2), pix)
            weights = detected
            if self.selection is not None:  # the views each keypoint is believed in
                keep = best_views(
                    self.cameras,
                    pix.transpose(0, 2, 1, 3),
                    detected.transpose(0, 2, 1),
                    self.selection,
                )
                weights = np.where(keep.transpose(0, 2, 1), detected, 0.0)
            if self.multiview == "direct":
                mapper = CalibratedCameras(self.cameras)
                result = solve_sequence(
                    plan, pix, weights, config, mapper=mapper, fps=fps,
                    coordinate_tasks=coordinate_tasks,
                )  # fmt: skip
            else:
                w = weights.transpose(0, 2, 1)  # (T, J, V)
                points = triangulate(self.cameras, pix.transpose(0, 2, 1, 3), w)
                seen = np.isfinite(points).all(-1)
                w3 = np.where(seen, w.sum(-1) / np.maximum((w > 0).sum(-1), 1), 0.0)
                result = solve_sequence(
                    plan, points, w3, config, fps=fps, coordinate_tasks=coordinate_tasks
                )
            fitted = np.asarray(result.fitted_position, np.float64)[:, :, None, :]
            predicted = project(pack(self.cameras), fitted).transpose(0, 2, 1, 3)
        error = np.sqrt(np.sum((predicted - pix) ** 2, axis=-1))
        seen = detected if self.kind == "cameras" else weights  # views left out: shown too
        return result, np.where(seen > 0, error, np.nan)


def observability(plan: BodyPlan, setup: ViewSetup) -> tuple[tuple[str, bool], ...]:
    """Which coordinates the views determine, at the plan's neutral pose.

    The image plane observes world x and y; one camera is treated like it in its own
    frame (orthographically: the depth along its optical axis, ``camera_z``, and the
    rotations out of its image plane count as unobserved; perspective determines them
    only weakly); several cameras observe everything their views reach.

    Returns
    -------
    tuple of (str, bool)
        ``root_position/x|y|z``, ``root_rotation/x|y|z`` (free base; ``camera_x|y|z``
        with one camera), then each DOF.
    """
    jac = jacobian(plan, np.asarray(plan.neutral, dtype=np.float64))  # (J, 3, nr + N)
    axes = "xyz"
    if setup.kind == "cameras" and len(setup.cameras) > 1:
        rows = jac
    else:  # the image plane, or one camera's own x-y (orthographic: depth unobserved)
        rot = setup.cameras[0].rotation_matrix if setup.kind == "cameras" else np.eye(3)
        rows = np.einsum("ab,jbk->jak", rot[:2], jac)
        if not plan.fixed_base:  # root coordinates along the camera's axes
            rows = rows.copy()
            for c in (0, 3):
                rows[..., c : c + 3] = rows[..., c : c + 3] @ rot.T
        if setup.kind == "cameras":
            axes = ("camera_x", "camera_y", "camera_z")
    norms = np.sqrt(np.sum(rows**2, axis=(0, 1)))
    ok = norms > OBSERVABLE_RTOL * max(float(norms.max(initial=0.0)), 1e-300)
    kinds = ("position", "rotation")
    root = [] if plan.fixed_base else [f"root_{w}/{a}" for w in kinds for a in axes]
    names = root + list(plan.dof_names)
    return tuple((n, bool(o)) for n, o in zip(names, ok, strict=True))


def view_setup(
    ds: xr.Dataset,
    plan: BodyPlan,
    *,
    multiview: str = "direct",
    image_scale: float | None = 1.0,
    source: str = "<tracks>",
) -> ViewSetup | None:
    """The :class:`ViewSetup` of a tracks store; None for 3D tracks.

    ``image_scale=None`` leaves a single-view session's scale to be estimated
    (:func:`with_estimated_scale`).

    Raises
    ------
    ConfigError
        An unknown ``multiview`` mode or a non-positive ``image_scale``.
    TracksError
        Cameras whose length unit differs from the body plan's.
    """
    if multiview not in MULTIVIEW_MODES:
        raise ConfigError(f"multiview: {multiview!r} is not one of {', '.join(MULTIVIEW_MODES)}")
    if image_scale is not None and not (np.isfinite(image_scale) and image_scale > 0):
        raise ConfigError(f"image_scale: must be a positive length per pixel, got {image_scale}")
    if is_multiview(ds):
        cameras = tuple(session_cameras(ds, source))
        unit = cameras[0].unit
        if plan.unit and unit not in ("unknown", plan.unit):
            raise TracksError(
                f"{source}: the cameras' extrinsics are in {unit!r} but the body plan is in "
                f"{plan.unit!r}; ingest again with the calibration in {plan.unit!r} "
                f"({flag('unit')}) or use a plan in the cameras' unit"
            )
        if multiview == "triangulate" and len(cameras) < 2:
            raise ConfigError(f"{source}: multiview 'triangulate' needs two or more cameras")
        selection = ViewSelection.from_attrs(ds.attrs.get("view_selection"), source)
        setup = ViewSetup(
            "cameras", tuple(c.name for c in cameras), cameras, multiview,  # type: ignore[arg-type]
            selection=selection,
        )  # fmt: skip
    elif ds.sizes["space"] == 2:
        scale = None if image_scale is None else float(image_scale)
        setup = ViewSetup("image", ("image",), image_scale=scale)
    else:
        return None
    return ViewSetup(**{**setup.__dict__, "observable": observability(plan, setup)})


def with_estimated_scale(
    setup: ViewSetup, ds: xr.Dataset, plan: BodyPlan, mapping: KeypointMapping, config
) -> ViewSetup:
    """``setup`` with its image scale estimated from the session (if it has none).

    :func:`pipeline.calibrate.image_scale.session_image_scale`; a session where no frame
    sees two mapped joints keeps the scale 1 (``scale_source="default"``) and warns.
    """
    if setup.kind != "image" or setup.image_scale is not None:
        return setup
    estimate = session_image_scale(ds, plan, mapping, config)
    if estimate is None:
        warnings.warn(
            "image scale: no frame sees two mapped keypoints, so the body's size in the "
            "image cannot be measured; fitting at 1 length unit per pixel (give "
            "--image-scale)",
            stacklevel=2,
        )
        return dataclasses.replace(setup, image_scale=1.0, scale_source="default")
    record = tuple(estimate.to_dict().items())
    return dataclasses.replace(
        setup, image_scale=estimate.value, scale_source="estimated", scale_estimate=record
    )


def _block(path: str, start: int, stop: int) -> BlockDigest:
    """Hash and check frames ``[start, stop)`` of a multi-view store (on a worker)."""
    position = read_frames(path, "position", MULTIVIEW_DIMS, start, stop)
    confidence = read_frames(path, "confidence", MULTIVIEW_CONFIDENCE_DIMS, start, stop)
    for name, values in (("position", position), ("confidence", confidence)):
        if np.isinf(values).any():
            frame = start + int(np.argwhere(np.isinf(values))[0][0])
            raise TracksError(
                f"{path}: field {name!r}: infinite value at frame {frame}; missing is NaN"
            )
    digest = new_digest()
    digest.update(position.tobytes())
    digest.update(confidence.tobytes())
    observed = np.isfinite(position).all(axis=2).any(axis=1).sum(axis=0)  # (K, I)
    return BlockDigest(start, digest.hexdigest(), observed, None)


def scan_views(tracks_path: str, ds: xr.Dataset, keypoints, setup: ViewSetup, client=None) -> str:
    """Content digest of a multi-view store and its setup (checks as ``scan_input``).

    Raises
    ------
    TracksError
        An infinite value, an unreadable chunk, or no mapped keypoint observed anywhere.
    """
    args = [(tracks_path, a, b) for a, b in block_ranges(ds.sizes["time"])]
    blocks, failures = run_tasks(_block, args, client)
    if failures:
        raise min(failures, key=lambda f: f[0][1])[1]
    blocks = sorted(blocks, key=lambda b: b.start)
    if sum(int(b.observed[list(keypoints)].sum()) for b in blocks) == 0:
        raise TracksError(
            f"{tracks_path}: all-NaN session: no keypoint that maps to a joint is observed in "
            "any view and frame; nothing to fit"
        )
    return json_sha256({"tracks": combine_digests(ds, blocks), "setup": setup.recipe()})
