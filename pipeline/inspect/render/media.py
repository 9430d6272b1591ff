"""What the renderers read and write: cameras to draw through, MP4 files (PyAV).

Camera objects come in three forms: a :class:`pipeline.cameras.Camera` (its lens
distortion included), a camera's name in a calibration (a file read by
:func:`pipeline.cameras.read_calibration`, a list of cameras or a name -> camera mapping),
or any object with ``project(points (N, 3)) -> (N, 2)`` pixels. Video is decoded and
encoded with PyAV (FFmpeg), the ``viz`` extra, imported only when a video is rendered.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from PIL import Image

from pipeline.cameras import Camera, pack, project, read_calibration
from pipeline.errors import InspectError
from pipeline.store.atomic import atomic_file

__all__ = ["CODEC", "Projector", "VideoWriter", "load_av", "pick_camera"]

CODEC = "libx264"


class Projector(Protocol):
    """A camera: world points ``(N, 3)`` in the fit's length unit -> pixels ``(N, 2)``."""

    def project(self, points: np.ndarray) -> np.ndarray:
        """Pixels of ``points``."""


class _CameraProjector:
    """A :class:`pipeline.cameras.Camera` as a projector (its distortion model included)."""

    def __init__(self, camera: Camera) -> None:
        self.camera = camera
        self.arrays = pack([camera])

    def project(self, points: np.ndarray) -> np.ndarray:
        """Pixels ``(N, 2)`` of world points ``(N, 3)``."""
        return project(self.arrays, np.asarray(points, dtype=float)[:, None, :])[:, 0]


def _cameras_of(calibration: Any) -> dict[str, Any]:
    """Camera name -> camera of a calibration file, list of cameras or mapping."""
    if isinstance(calibration, str | Path):
        calibration = read_calibration(calibration)
    if isinstance(calibration, Mapping):
        return {str(k): v for k, v in calibration.items()}
    if isinstance(calibration, Sequence):
        return {str(getattr(c, "name", i)): c for i, c in enumerate(calibration)}
    raise InspectError(
        f"calibration: expected a calibration file, a list of cameras or a mapping of "
        f"camera names to cameras, got {type(calibration).__name__}"
    )


def pick_camera(camera: Any, calibration: Any, source: str, unit: str) -> Projector | None:
    """The camera to draw through: given directly, or by name from ``calibration``.

    Parameters
    ----------
    camera : Camera, str, object with ``project`` or None
        See the module docstring; None with a one-camera calibration picks that camera.
    calibration : str, Path, sequence of Camera, mapping or None
    source : str
        The video, for messages.
    unit : str
        The fit's length unit; a :class:`~pipeline.cameras.Camera` in another (known)
        unit is an error.

    Returns
    -------
    Projector or None
        None when neither is given.

    Raises
    ------
    InspectError
        A name not in the calibration (the message lists the cameras), a name without a
        calibration, a unit mismatch, or an object that cannot project.
    """
    if calibration is not None and (camera is None or isinstance(camera, str)):
        cameras = _cameras_of(calibration)
        names = list(cameras)
        if camera is None and len(names) == 1:
            camera = names[0]
        if camera is None or camera not in cameras:
            raise InspectError(
                f"{source}: camera {camera!r} is not in the calibration; cameras: "
                f"{', '.join(names) or 'none'}"
            )
        camera = cameras[camera]
    elif isinstance(camera, str):
        raise InspectError(
            f"{source}: camera {camera!r} given by name needs calibration= (a calibration "
            "file or the cameras)"
        )
    if isinstance(camera, Camera):
        if camera.unit not in ("unknown", unit) and unit:
            raise InspectError(
                f"{source}: camera {camera.name!r} has its extrinsics in {camera.unit}, the "
                f"fit is in {unit}; read the calibration with unit={unit!r} or rescale it"
            )
        return _CameraProjector(camera)
    if camera is not None and not callable(getattr(camera, "project", None)):
        raise InspectError(
            f"{source}: camera must be a pipeline.cameras.Camera, a camera name or an "
            f"object with project(points) -> pixels; got {type(camera).__name__}"
        )
    return camera


def load_av():
    """PyAV (FFmpeg), the ``viz`` extra."""
    try:
        import av  # optional extra: only the renderers need it
    except ImportError:
        raise ImportError("rendering MP4 needs PyAV: pip install 'kinefit[viz]'") from None
    return av


def _rate(fps: float) -> Fraction:
    return Fraction(fps).limit_denominator(1001)


class VideoWriter:
    """H.264 MP4 writer (yuv420p needs even sizes: odd ones are padded by a pixel).

    A context manager: the video is encoded into a temporary file beside ``out``
    (:func:`~pipeline.store.atomic.atomic_file`) and appears under its name only when the
    block finishes without an error; otherwise nothing is left behind.
    """

    def __init__(self, out: Path, width: int, height: int, fps: float) -> None:
        self.out = Path(out)
        if self.out.suffix.lower() != ".mp4":
            raise InspectError(
                f"{self.out}: the video is written as H.264 MP4; give a file name ending in .mp4"
            )
        if self.out.is_dir():
            raise InspectError(f"{self.out}: is a folder; give the MP4 file to write")
        self.size = (width + width % 2, height + height % 2)
        self.fps = fps
        self.av = load_av()
        self._file = contextlib.ExitStack()

    def __enter__(self) -> VideoWriter:
        tmp = self._file.enter_context(atomic_file(self.out))
        self.container = self.av.open(str(tmp), "w")
        self.stream = self.container.add_stream(CODEC, rate=_rate(self.fps))
        self.stream.width, self.stream.height = self.size
        self.stream.pix_fmt = "yuv420p"
        self.stream.options = {"crf": "18", "preset": "veryfast"}
        return self

    def write(self, image: Image.Image) -> None:
        """Encode one RGB image (padded to an even size)."""
        if image.size != self.size:
            canvas = Image.new("RGB", self.size, "black")
            canvas.paste(image, (0, 0))
            image = canvas
        frame = self.av.VideoFrame.from_image(image)
        self.container.mux(self.stream.encode(frame))

    def __exit__(self, *exc: Any) -> None:
        with self._file:  # renames the finished file in, or removes it on an error
            try:
                if exc[0] is None:
                    self.container.mux(self.stream.encode(None))
            finally:
                self.container.close()
            if exc[0] is not None:
                raise exc[1]
