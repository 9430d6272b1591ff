"""Render a fit to MP4: over the source video, or as a 3D animation without one.

:func:`render_overlay` decodes the session's video with PyAV (FFmpeg), draws the fitted
skeleton and the observed keypoints onto every frame and encodes the result (H.264). The
skeleton goes through the camera that filmed the video (any object with ``project(points
(N, 3)) -> (N, 2)`` pixels, such as :class:`pipeline.cameras.Camera`, given directly or by
name from a calibration) or, for single-view 2D tracks fitted in image coordinates, is
drawn at its x, y. :func:`render_animation` draws the fit from a virtual orthographic
camera on a white background, for slides and for sessions without video.

Both return a :class:`Rendered`, which keeps the pixel coordinates of every drawn joint,
so the drawing can be checked against known projections.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr
from PIL import Image

from pipeline.bodyplan import BodyPlan
from pipeline.errors import InspectError, flag
from pipeline.inspect.data.checks import body_plan_of, pick_individuals, time_unit
from pipeline.inspect.data.display import view_axes
from pipeline.inspect.data.fit_archive import open_observed
from pipeline.inspect.data.playback import skeleton_paths
from pipeline.inspect.render.draw import OrbitCamera, draw_frame, edges_of
from pipeline.inspect.render.media import VideoWriter, load_av, pick_camera

__all__ = ["Rendered", "render_animation", "render_overlay"]

#: Relative difference between the video's frame rate and the session's that is an error.
RATE_TOLERANCE = 1e-3


@dataclass(frozen=True)
class Rendered:
    """What a render wrote.

    Attributes
    ----------
    path : Path
        The MP4 file.
    frames : numpy.ndarray of int, shape (F,)
        Fit frame of each output frame.
    fitted : numpy.ndarray, shape (F, I, K, 2)
        Pixel ``(u, v)`` where each fitted joint was drawn (NaN: not drawn).
    observed : numpy.ndarray or None, shape (F, I, K, 2)
        Pixel of each observed keypoint drawn.
    individuals, keypoints : tuple of str
    fps : float
        Output frame rate (Hz).
    """

    path: Path
    frames: np.ndarray
    fitted: np.ndarray
    observed: np.ndarray | None
    individuals: tuple[str, ...]
    keypoints: tuple[str, ...]
    fps: float


def _fitted(fit: xr.Dataset, func: str) -> xr.DataArray:
    if "fitted_position" not in fit.data_vars:
        have = ", ".join(sorted(map(str, fit.data_vars))) or "none"
        where = fit.attrs.get("session") or "the fit"
        raise InspectError(
            f"{func}: {where} has no 'fitted_position' (time, space, keypoint, individual) "
            f"to draw (the dataset has: {have}); open a complete fit store with "
            "pipeline.inspect.open_fit"
        )
    return fit["fitted_position"]


def _frame_rate(video_fps: float | None, fit: xr.Dataset, source: str) -> None:
    fps = float(fit.attrs.get("fps") or 0)
    if fps and video_fps and abs(video_fps - fps) > RATE_TOLERANCE * fps:
        raise InspectError(
            f"{source}: the video runs at {video_fps:.6g} frames/s, the session "
            f"{fit.attrs.get('session') or ''} at {fps:.6g}; overlay the video it was "
            "tracked from"
        )


def _observed_array(
    observed: xr.DataArray | None, individuals: list[str], view: str | None
) -> xr.DataArray | None:
    if observed is None:
        return None
    if "view" in observed.dims:
        views = [str(v) for v in observed["view"].values]
        if view not in views:
            return None
        observed = observed.sel(view=view)
    return observed.sel(individual=individuals).transpose("time", "individual", "keypoint", "space")


def render_overlay(
    fit: xr.Dataset,
    video: str | Path,
    out: str | Path,
    camera: Any = None,
    calibration: Any = None,
    *,
    offset: int = 0,
    observed: xr.DataArray | None | str = "auto",
    individual: str | Sequence[str] | None = None,
    plan: BodyPlan | None = None,
) -> Rendered:
    """Draw the fit onto the video it was tracked from and write an MP4.

    Parameters
    ----------
    fit : xarray.Dataset
        An opened fit; needs ``fitted_position``.
    video : str or Path
        The session's video (any format FFmpeg reads).
    out : str or Path
        The MP4 to write (replaced atomically when done).
    camera : pipeline.cameras.Camera, str or object, optional
        The camera that filmed ``video`` (lens distortion included), its name in
        ``calibration``, or any object with ``project(points (N, 3)) -> (N, 2)`` pixels.
        Without one, the fit must be in image coordinates (single-view 2D tracks, ``unit``
        "px"): x, y are drawn as pixels.
    calibration : str, Path, list of Camera or mapping, optional
        A calibration file (:func:`pipeline.cameras.read_calibration`), its cameras, or
        camera name -> camera; with a single camera ``camera`` may be omitted.
    offset : int
        Video frame of the session's first frame (the video may start earlier).
    observed : xarray.DataArray, None or "auto"
        Observed keypoints drawn as crosses (3D ones through the camera, a multi-view
        store's view named like the camera as they are); "auto" opens the fit's tracks.
    individual : str or sequence of str, optional
    plan : BodyPlan, optional
        For the bones; default the fit's stored plan.

    Returns
    -------
    Rendered

    Raises
    ------
    InspectError
        No ``fitted_position``; a camera name not in the calibration; a 3D fit without a
        camera; a video whose frame rate differs from the session's, or whose frame count
        is not ``offset`` + the session's.
    """
    fitted = _fitted(fit, "render_overlay")
    unit = str(fit.attrs.get("unit") or "")
    projector = pick_camera(camera, calibration, str(video), unit)
    image_coords = unit == "px"
    if projector is None and not image_coords:
        raise InspectError(
            f"render_overlay: {fit.attrs.get('session') or 'the fit'} is in "
            f"{fit.attrs.get('unit') or 'unknown units'}, not image pixels; pass the camera "
            "that filmed the video (camera=, calibration=), or use render_animation"
        )
    video, out = Path(video), Path(out)
    individuals = pick_individuals(fit, individual)
    n = fit.sizes["time"]
    if observed == "auto":
        try:
            observed = open_observed(fit)
        except (FileNotFoundError, ValueError, OSError):
            observed = None
    view = getattr(projector, "camera", camera)
    seen = _observed_array(observed, individuals, getattr(view, "name", view))
    if not video.is_file():
        raise InspectError(f"{video}: no such video file")
    av = load_av()
    try:
        source = av.open(str(video))
    except av.error.FFmpegError as exc:
        raise InspectError(f"{video}: not a video FFmpeg can read ({exc})") from None
    with source:
        stream = source.streams.video[0]
        rate = float(stream.average_rate) if stream.average_rate else None
        _frame_rate(rate, fit, str(video))
        if stream.frames and stream.frames != offset + n:
            raise InspectError(
                f"{video}: {stream.frames} video frames, but the session has {n} frames "
                f"starting at video frame {offset} (offset=); pass offset= for a video that "
                "starts earlier, or the video the session was tracked from"
            )
        fps = rate or float(fit.attrs.get("fps") or 30.0)
        result = _Drawing(fit, fitted, individuals, plan, projector, seen)
        index = -1
        with VideoWriter(out, stream.width, stream.height, fps) as writer:
            for index, frame in enumerate(source.decode(stream)):
                k = index - offset
                if k < 0:
                    continue
                if k >= n:
                    raise InspectError(
                        f"{video}: more than {offset + n} frames (the session's {n} from "
                        f"offset {offset}); pass the video the session was tracked from"
                    )
                writer.write(result.draw(frame.to_image().convert("RGB"), k))
            if index + 1 != offset + n:
                raise InspectError(
                    f"{video}: {index + 1} video frames, but the session has {n} frames "
                    f"starting at video frame {offset} (offset=)"
                )
    return result.rendered(out, fps)


class _Drawing:
    """Projects and draws one fit frame after frame, keeping the drawn pixels."""

    def __init__(self, fit, fitted, individuals, plan, projector, seen) -> None:
        self.fit = fit
        self.fitted = fitted.sel(individual=individuals).transpose(
            "time", "individual", "keypoint", "space"
        )
        self.individuals = individuals
        self.names = [str(k) for k in fit["keypoint"].values]
        plan = body_plan_of(fit, plan)
        self.edges = edges_of(skeleton_paths(plan, self.names))
        self.projector = projector
        self.seen = seen
        self.frames: list[int] = []
        self.drawn: list[np.ndarray] = []
        self.drawn_seen: list[np.ndarray] = []
        self.t_unit = time_unit(fit)

    def _project(self, points: np.ndarray) -> np.ndarray:
        flat = points.reshape(-1, points.shape[-1]).astype(float)
        if self.projector is None:
            return flat[:, :2].reshape(*points.shape[:-1], 2)
        uv = np.full((len(flat), 2), np.nan)
        ok = np.isfinite(flat).all(axis=1)
        if ok.any():
            uv[ok] = np.asarray(self.projector.project(flat[ok]), dtype=float).reshape(-1, 2)
        return uv.reshape(*points.shape[:-1], 2)

    def draw(self, image: Image.Image, k: int, text: str | None = None) -> Image.Image:
        fitted = self._project(np.asarray(self.fitted.isel(time=k).values))
        seen = None
        if self.seen is not None:
            points = np.asarray(self.seen.isel(time=k).values, dtype=float)
            seen = points[..., :2] if points.shape[-1] == 2 else self._project(points)
        t = float(self.fit["time"].values[k])
        caption = text if text is not None else f"t = {t:.3f} {self.t_unit} (frame {k})"
        draw_frame(image, fitted, seen, self.edges, text=caption)
        self.frames.append(k)
        self.drawn.append(fitted)
        if seen is not None:
            self.drawn_seen.append(seen)
        return image

    def rendered(self, out: Path, fps: float) -> Rendered:
        shape = (0, len(self.individuals), len(self.names), 2)
        return Rendered(
            out,
            np.asarray(self.frames, dtype=int),
            np.stack(self.drawn) if self.drawn else np.zeros(shape),
            np.stack(self.drawn_seen) if self.drawn_seen else None,
            tuple(self.individuals),
            tuple(self.names),
            fps,
        )


def render_animation(
    fit: xr.Dataset,
    out: str | Path,
    *,
    size: tuple[int, int] = (960, 720),
    azimuth: float = 35.0,
    elevation: float = 20.0,
    step: int = 1,
    observed: xr.DataArray | None | str = "auto",
    individual: str | Sequence[str] | None = None,
    plan: BodyPlan | None = None,
) -> Rendered:
    """Render the fit as a 3D animation (MP4), seen from a fixed orthographic camera.

    Parameters
    ----------
    fit : xarray.Dataset
        An opened fit; needs ``fitted_position``.
    out : str or Path
        The MP4 to write.
    size : (int, int)
        Width and height (px).
    azimuth, elevation : float
        Viewing direction (degrees): about the fit's up axis, and above the ground.
    step : int
        Every ``step``-th frame (the output plays at the session's rate / ``step``, in
        real time).
    observed, individual, plan
        As :func:`render_overlay`.

    Returns
    -------
    Rendered
        ``fitted`` holds the pixels in the animation's image.

    Raises
    ------
    InspectError
        No ``fitted_position``, or ``step`` < 1.
    """
    fitted = _fitted(fit, "render_animation")
    n_frames = fit.sizes["time"]
    if not 1 <= int(step) <= max(n_frames, 1):
        raise InspectError(
            f"render_animation: {flag('step').rstrip('=')} must be 1 to the fit's "
            f"{n_frames} frames, got {step}"
        )
    individuals = pick_individuals(fit, individual)
    if observed == "auto":
        try:
            observed = open_observed(fit)
        except (FileNotFoundError, ValueError, OSError):
            observed = None
    frames = np.arange(0, fit.sizes["time"], int(step))
    every = frames[:: max(1, len(frames) // 50)]
    sample = np.asarray(fitted.sel(individual=individuals).isel(time=every).values)
    points = np.moveaxis(sample, 1, -1).reshape(-1, 3)
    points = points[np.isfinite(points).all(axis=1)]
    lo, hi = (points.min(axis=0), points.max(axis=0)) if len(points) else (np.zeros(3), np.ones(3))
    _, _, up, sign = view_axes(fit.attrs.get("up_axis"))
    width, height = int(size[0]), int(size[1])
    half = float((hi - lo).max()) * 0.6 + 1e-9
    camera = OrbitCamera((lo + hi) / 2, half, width, height, azimuth, elevation, up, sign)
    seen = _observed_array(observed, individuals, None)
    if seen is not None and seen.sizes["space"] != 3:
        seen = None
    fps = float(fit.attrs.get("fps") or 30.0) / int(step)
    drawing = _Drawing(fit, fitted, individuals, plan, camera, seen)
    with VideoWriter(Path(out), width, height, fps) as writer:
        for k in frames:
            writer.write(drawing.draw(Image.new("RGB", (width, height), "white"), int(k)))
    return drawing.rendered(Path(out), fps)
