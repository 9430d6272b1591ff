"""One calibrated camera: image size, intrinsics, lens distortion and pose.

A :class:`Camera` is frozen and validated on construction. It maps a world point ``p``
(extrinsics' length unit) to the camera frame with ``Xc = rotation @ p + translation``
(world-to-camera, OpenCV's convention: ``+z`` looks into the scene, ``+x`` right, ``+y``
down the image), then to pixels through the pinhole intrinsics and the lens distortion
(formulas in :mod:`pipeline.cameras.lens_projection`).

Distortion models and their coefficients (OpenCV's names and order):

=========  ====================  ==========================================================
model      ``coefficients``      OpenCV function
=========  ====================  ==========================================================
none       ``()``                ``cv2.projectPoints`` with zero distortion
radtan     ``(k1, k2, p1, p2,    ``cv2.projectPoints`` (radial-tangential, "plumb bob");
           k3)``                 four given values mean ``k3 = 0`` and are stored as five
fisheye    ``(k1, k2, k3, k4)``  ``cv2.fisheye.projectPoints`` (equidistant)
=========  ====================  ==========================================================

Errors are :class:`pipeline.errors.CameraError`; their message starts with the file (or
``source``), the camera and the field, e.g. ``calibration.toml: camera 'top': field
'rotation': not a rotation: R @ R.T differs from I by 0.41``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pipeline.cameras.rodrigues import matrix_to_rvec, rvec_to_matrix
from pipeline.errors import CameraError

__all__ = [
    "DISTORTION_MODELS",
    "LENGTH_UNITS",
    "Camera",
    "camera_error",
    "check_unique_names",
    "normalize_unit",
]

DISTORTION_MODELS = ("none", "radtan", "fisheye")
"""Valid values of :attr:`Camera.distortion`."""

LENGTH_UNITS = ("m", "cm", "mm", "um", "km", "in", "ft", "unknown")
"""Valid values of :attr:`Camera.unit` (after :func:`normalize_unit`)."""

_UNIT_ALIASES = {
    alias: unit
    for unit, aliases in {
        "m": ("meter", "meters", "metre", "metres"),
        "cm": ("centimeter", "centimeters", "centimetre", "centimetres"),
        "mm": ("millimeter", "millimeters", "millimetre", "millimetres"),
        "um": ("µm", "micrometer", "micrometers", "micron", "microns"),
        "in": ("inch", "inches"),
        "ft": ("foot", "feet"),
    }.items()
    for alias in aliases
}

_N_COEFFICIENTS = {"none": (0,), "radtan": (4, 5), "fisheye": (4,)}
ROTATION_TOLERANCE = 1e-6
"""Largest ``|R @ R.T - I|`` entry (and ``|det R - 1|``) accepted as a rotation."""

_IDENTITY = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))


def camera_error(
    source: str, reason: str, *, camera: str | None = None, field: str | None = None
) -> CameraError:
    """A :class:`CameraError` whose message names ``source``, ``camera`` and ``field``."""
    where = source
    if camera is not None:
        where += f": camera {camera!r}"
    if field is not None:
        where += f": field {field!r}"
    return CameraError(f"{where}: {reason}")


def normalize_unit(unit: str | None, source: str = "<camera>", camera: str | None = None) -> str:
    """The canonical spelling of a length unit (``None`` means ``"unknown"``).

    Raises
    ------
    CameraError
        For a string that is not one of :data:`LENGTH_UNITS` (or a spelled-out alias).
    """
    if unit is None:
        return "unknown"
    text = str(unit).strip()
    key = _UNIT_ALIASES.get(text.lower(), text.lower() if text.lower() in LENGTH_UNITS else text)
    if key not in LENGTH_UNITS:
        raise camera_error(
            source,
            f"{unit!r} is not a length unit; valid: {', '.join(LENGTH_UNITS)}",
            camera=camera,
            field="unit",
        )
    return key


def _floats(value: Any, shape: tuple[int, ...], what: str, source: str, name: str) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise camera_error(
            source, f"expected numbers of shape {shape}, got {value!r}", camera=name, field=what
        ) from None
    if arr.shape != shape:
        raise camera_error(
            source,
            f"expected shape {shape}, got {arr.shape}",
            camera=name,
            field=what,
        )
    if not np.all(np.isfinite(arr)):
        raise camera_error(source, f"non-finite values {arr.tolist()}", camera=name, field=what)
    return arr


def _check_rotation(rot: np.ndarray, source: str, name: str) -> None:
    off = float(np.max(np.abs(rot @ rot.T - np.eye(3))))
    det = float(np.linalg.det(rot))
    if off > ROTATION_TOLERANCE or abs(det - 1.0) > ROTATION_TOLERANCE:
        raise camera_error(
            source,
            f"not a rotation: R @ R.T differs from I by {off:.3g} and det(R) = {det:.6g} "
            f"(a proper rotation has R @ R.T = I and det 1, within {ROTATION_TOLERANCE:g})",
            camera=name,
            field="rotation",
        )


@dataclass(frozen=True)
class Camera:
    """A calibrated camera (world-to-camera pose, pinhole intrinsics, lens distortion).

    Attributes
    ----------
    name : str
        Camera name (matches a view of a multi-view session).
    size : (int, int)
        Image ``(width, height)`` in pixels.
    fx, fy : float
        Focal lengths in pixels (positive).
    cx, cy : float
        Principal point in pixels. Skew is always 0 (as in ``cv2.projectPoints``).
    distortion : {"none", "radtan", "fisheye"}
        Lens model (see the module docstring).
    coefficients : tuple of float
        The model's coefficients: ``()``, ``(k1, k2, p1, p2, k3)`` or ``(k1, k2, k3, k4)``.
    rotation : (3, 3) nested tuple
        World-to-camera rotation (a proper rotation; checked).
    translation : (3,) tuple
        World-to-camera translation, in :attr:`unit`.
    unit : str
        Length unit of the extrinsics (one of :data:`LENGTH_UNITS`; ``"unknown"`` when the
        calibration does not record it).
    source : str
        Where the camera came from (a file path), used in error messages; not compared.
    """

    name: str
    size: tuple[int, int]
    fx: float
    fy: float
    cx: float
    cy: float
    distortion: str = "none"
    coefficients: tuple[float, ...] = ()
    rotation: tuple[tuple[float, float, float], ...] = _IDENTITY
    translation: tuple[float, float, float] = (0.0, 0.0, 0.0)
    unit: str = "unknown"
    source: str = field(default="<camera>", compare=False, repr=False)

    def __post_init__(self) -> None:
        src, name = self.source, self.name
        if not isinstance(name, str) or not name.strip():
            raise camera_error(src, f"camera name must be a non-empty string, got {name!r}")
        size = _floats(self.size, (2,), "size", src, name)
        if np.any(size <= 0) or np.any(size != np.round(size)):
            raise camera_error(
                src,
                f"expected positive whole pixels, got {size.tolist()}",
                camera=name,
                field="size",
            )
        for key in ("fx", "fy", "cx", "cy"):
            v = _floats(getattr(self, key), (), key, src, name)
            if key in ("fx", "fy") and v <= 0:
                raise camera_error(src, f"must be > 0, got {float(v)}", camera=name, field=key)
            object.__setattr__(self, key, float(v))
        if self.distortion not in DISTORTION_MODELS:
            raise camera_error(
                src,
                f"unknown distortion model {self.distortion!r}; valid: "
                + ", ".join(DISTORTION_MODELS),
                camera=name,
                field="distortion",
            )
        coef = np.asarray(self.coefficients, dtype=np.float64).ravel()
        allowed = _N_COEFFICIENTS[self.distortion]
        if coef.size not in allowed:
            raise camera_error(
                src,
                f"{self.distortion} takes {' or '.join(map(str, allowed))} coefficients, "
                f"got {coef.size}",
                camera=name,
                field="coefficients",
            )
        if not np.all(np.isfinite(coef)):
            raise camera_error(src, "non-finite coefficient", camera=name, field="coefficients")
        if self.distortion == "radtan" and coef.size == 4:
            coef = np.append(coef, 0.0)
        rot = _floats(self.rotation, (3, 3), "rotation", src, name)
        _check_rotation(rot, src, name)
        t = _floats(self.translation, (3,), "translation", src, name)
        object.__setattr__(self, "size", (int(size[0]), int(size[1])))
        object.__setattr__(self, "coefficients", tuple(float(c) for c in coef))
        object.__setattr__(self, "rotation", tuple(tuple(float(v) for v in row) for row in rot))
        object.__setattr__(self, "translation", tuple(float(v) for v in t))
        object.__setattr__(self, "unit", normalize_unit(self.unit, src, name))

    @property
    def matrix(self) -> np.ndarray:
        """``(3, 3)`` intrinsic matrix ``[[fx, 0, cx], [0, fy, cy], [0, 0, 1]]`` (pixels)."""
        return np.array([[self.fx, 0.0, self.cx], [0.0, self.fy, self.cy], [0.0, 0.0, 1.0]])

    @property
    def rotation_matrix(self) -> np.ndarray:
        """``(3, 3)`` world-to-camera rotation as an array."""
        return np.array(self.rotation)

    @property
    def rvec(self) -> np.ndarray:
        """``(3,)`` Rodrigues vector (axis times angle, rad) of :attr:`rotation`."""
        return matrix_to_rvec(self.rotation_matrix)

    @property
    def tvec(self) -> np.ndarray:
        """``(3,)`` world-to-camera translation as an array (:attr:`unit`)."""
        return np.array(self.translation)

    @property
    def center(self) -> np.ndarray:
        """``(3,)`` camera centre in world coordinates: ``-R.T @ t``."""
        return -self.rotation_matrix.T @ self.tvec

    @property
    def dist_coeffs(self) -> np.ndarray:
        """Coefficients as OpenCV takes them: ``(5,)`` radtan, ``(4,)`` fisheye, ``(0,)``."""
        return np.array(self.coefficients, dtype=np.float64)

    @classmethod
    def from_rvec(cls, rvec: Sequence[float], **kwargs: Any) -> Camera:
        """A camera whose rotation is given as a Rodrigues vector (rad)."""
        src, name = kwargs.get("source", "<camera>"), kwargs.get("name", "?")
        r = _floats(rvec, (3,), "rotation", src, name)
        return cls(rotation=rvec_to_matrix(r), **kwargs)

    def replace(self, **changes: Any) -> Camera:
        """A copy with some fields changed (validated again)."""
        values = {k: getattr(self, k) for k in self.__dataclass_fields__}
        values.update(changes)
        return Camera(**values)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict of every field but ``source`` (inverse of :meth:`from_dict`)."""
        return {
            "name": self.name,
            "size": list(self.size),
            "fx": self.fx,
            "fy": self.fy,
            "cx": self.cx,
            "cy": self.cy,
            "distortion": self.distortion,
            "coefficients": list(self.coefficients),
            "rotation": [list(row) for row in self.rotation],
            "translation": list(self.translation),
            "unit": self.unit,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "<dict>") -> Camera:
        """Inverse of :meth:`to_dict`; missing or unknown keys are a :class:`CameraError`."""
        name = data.get("name", "?") if isinstance(data, dict) else "?"
        if not isinstance(data, dict):
            raise camera_error(source, f"expected a table of camera fields, got {data!r}")
        keys = set(cls.__dataclass_fields__) - {"source"}
        missing = sorted(keys - set(data))
        extra = sorted(set(data) - keys)
        if missing or extra:
            raise camera_error(
                source,
                f"missing fields {missing}, unknown fields {extra}; expected {sorted(keys)}",
                camera=str(name),
            )
        return cls(**data, source=source)

    def allclose(self, other: Camera, rtol: float = 1e-12, atol: float = 1e-12) -> bool:
        """Same name, size, model and unit, and numbers equal within tolerances."""
        if (self.name, self.size, self.distortion, self.unit) != (
            other.name,
            other.size,
            other.distortion,
            other.unit,
        ):
            return False
        mine = [self.fx, self.fy, self.cx, self.cy, *self.coefficients]
        theirs = [other.fx, other.fy, other.cx, other.cy, *other.coefficients]
        return (
            len(mine) == len(theirs)
            and np.allclose(mine, theirs, rtol=rtol, atol=atol)
            and np.allclose(self.rotation, other.rotation, rtol=rtol, atol=atol)
            and np.allclose(self.translation, other.translation, rtol=rtol, atol=atol)
        )


def check_unique_names(cameras: Sequence[Camera], source: str) -> None:
    """Raise a :class:`CameraError` naming the first camera name used twice."""
    seen: set[str] = set()
    for cam in cameras:
        if cam.name in seen:
            raise camera_error(
                source, "duplicate camera name (each camera needs its own)", camera=cam.name
            )
        seen.add(cam.name)
