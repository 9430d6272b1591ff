"""One camera's fields from a parsed calibration table, whatever the file's spelling.

Shared by the TOML (Anipose, Pose2Sim) and OpenCV-style (YAML/JSON) readers. A camera table
is a mapping; for each field the first key present among its spellings is used:

===========  ==========================================================================
field        keys (first found wins)
===========  ==========================================================================
name         ``name``, ``camera_name`` (else the table's key or the file's stem)
size         ``size``, ``image_size``, ``imageSize``, ``resolution`` as ``[w, h]``; or
             ``image_width`` + ``image_height``; or ``width`` + ``height``
matrix       ``matrix``, ``camera_matrix``, ``cameraMatrix``, ``K``, ``intrinsic_matrix``,
             ``intrinsics``, ``mtx`` (3x3, or 9 numbers)
distortion   ``distortions``, ``dist_coeffs``, ``distCoeffs``, ``distortion_coefficients``,
             ``dist``, ``D``, ``distortion``
model        ``fisheye`` (bool), or ``distortion_model`` / ``model``: ``plumb_bob``,
             ``radtan``, ``radial-tangential``, ``opencv``, ``pinhole`` (radtan);
             ``equidistant``, ``fisheye``, ``kannala_brandt`` (fisheye); ``none``
rotation     ``rotation``, ``R``, ``rotation_matrix``, ``rvec``, ``rvecs``, ``Rot``,
             ``om``: 3 numbers are a Rodrigues vector, 3x3 (or 9 numbers) a matrix
translation  ``translation``, ``T``, ``t``, ``tvec``, ``tvecs``, ``translation_vector``
unit         ``unit`` (optional)
===========  ==========================================================================

Matrices may be nested lists, flat lists, or ``{rows, cols, data}`` mappings (OpenCV
FileStorage's ``!!opencv-matrix``, ROS ``camera_info``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from pipeline.cameras.camera import Camera, camera_error
from pipeline.cameras.rodrigues import rvec_to_matrix

__all__ = ["KEYS", "camera_from_table", "looks_like_camera"]

KEYS: dict[str, tuple[str, ...]] = {
    "name": ("name", "camera_name"),
    "size": ("size", "image_size", "imageSize", "resolution"),
    "matrix": (
        "matrix",
        "camera_matrix",
        "cameraMatrix",
        "K",
        "intrinsic_matrix",
        "intrinsics",
        "mtx",
    ),
    "distortion": (
        "distortions",
        "dist_coeffs",
        "distCoeffs",
        "distortion_coefficients",
        "dist",
        "D",
        "distortion",
    ),
    "model": ("distortion_model", "model"),
    "rotation": ("rotation", "R", "rotation_matrix", "rvec", "rvecs", "Rot", "om"),
    "translation": ("translation", "T", "t", "tvec", "tvecs", "translation_vector"),
}

_MODELS = {
    "plumb_bob": "radtan",
    "radtan": "radtan",
    "radial-tangential": "radtan",
    "radial_tangential": "radtan",
    "opencv": "radtan",
    "pinhole": "radtan",
    "equidistant": "fisheye",
    "fisheye": "fisheye",
    "kannala_brandt": "fisheye",
    "kannala-brandt": "fisheye",
    "none": "none",
}


def looks_like_camera(table: Any) -> bool:
    """Whether a mapping holds a camera's intrinsics (any spelling of the matrix key)."""
    return isinstance(table, Mapping) and any(k in table for k in KEYS["matrix"])


def _first(table: Mapping, field: str) -> tuple[str | None, Any]:
    for key in KEYS[field]:
        if key in table:
            return key, table[key]
    return None, None


def _numbers(value: Any, source: str, camera: str, key: str) -> np.ndarray:
    if isinstance(value, Mapping) and "data" in value:  # {rows, cols, data}
        data = np.asarray(value["data"], dtype=np.float64)
        rows, cols = value.get("rows"), value.get("cols")
        if rows is not None and cols is not None and int(rows) * int(cols) == data.size:
            data = data.reshape(int(rows), int(cols))
        return data
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise camera_error(
            source, f"expected numbers, got {value!r}", camera=camera, field=key
        ) from None


def _require(table: Mapping, field: str, source: str, camera: str) -> tuple[str, np.ndarray]:
    key, value = _first(table, field)
    if key is None:
        raise camera_error(
            source,
            f"missing {field}; expected one of the keys " + ", ".join(KEYS[field]),
            camera=camera,
            field=field,
        )
    return key, _numbers(value, source, camera, key)


def _size(table: Mapping, source: str, camera: str) -> tuple[float, float]:
    key, value = _first(table, "size")
    if key is not None:
        arr = _numbers(value, source, camera, key).ravel()
        if arr.shape != (2,):
            raise camera_error(
                source, f"expected [width, height], got {value!r}", camera=camera, field=key
            )
        return float(arr[0]), float(arr[1])
    for wk, hk in (("image_width", "image_height"), ("width", "height")):
        if wk in table and hk in table:
            return float(table[wk]), float(table[hk])
    raise camera_error(
        source,
        "missing image size; expected one of the keys "
        + ", ".join(KEYS["size"])
        + " as [width, height], or image_width + image_height",
        camera=camera,
        field="size",
    )


def _model(table: Mapping, source: str, camera: str) -> str:
    key, value = _first(table, "model")
    fisheye = table.get("fisheye")
    if fisheye is not None and not isinstance(fisheye, bool | np.bool_ | int):
        raise camera_error(
            source, f"expected true or false, got {fisheye!r}", camera=camera, field="fisheye"
        )
    if key is None:
        return "fisheye" if fisheye else "radtan"
    model = _MODELS.get(str(value).strip().lower())
    if model is None:
        raise camera_error(
            source,
            f"unknown distortion model {value!r}; valid: " + ", ".join(sorted(_MODELS)),
            camera=camera,
            field=key,
        )
    if fisheye is not None and bool(fisheye) != (model == "fisheye"):
        raise camera_error(
            source, f"fisheye = {fisheye} contradicts {key} = {value!r}", camera=camera, field=key
        )
    return model


def _coefficients(model: str, coef: np.ndarray, key: str, source: str, camera: str):
    coef = coef.ravel()
    if model == "none":
        if np.any(coef != 0):
            raise camera_error(
                source, "model 'none' takes no distortion coefficients", camera=camera, field=key
            )
        return ()
    if model == "fisheye":
        if coef.size != 4:
            raise camera_error(
                source,
                f"fisheye takes 4 coefficients (k1..k4), got {coef.size}",
                camera=camera,
                field=key,
            )
        return tuple(coef)
    if coef.size in (4, 5):
        return tuple(coef)
    if coef.size in (8, 12, 14) and np.all(coef[5:] == 0):
        return tuple(coef[:5])  # OpenCV's longer vectors with the extra terms unused
    raise camera_error(
        source,
        f"radtan takes 4 or 5 coefficients (k1 k2 p1 p2 [k3]), got {coef.size}"
        + (" (rational, thin-prism and tilt terms are not supported)" if coef.size > 5 else ""),
        camera=camera,
        field=key,
    )


def camera_from_table(
    table: Mapping, source: str, default_name: str, unit: str | None = None
) -> Camera:
    """A :class:`Camera` from one camera table (keys in the module docstring).

    Parameters
    ----------
    table : mapping
        The camera's fields.
    source : str
        The file, for error messages.
    default_name : str
        Name used when the table has no ``name`` key (the table's key, the file stem).
    unit : str, optional
        Extrinsics' length unit; else the table's ``unit`` key; else ``"unknown"``.

    Raises
    ------
    CameraError
        Naming the file, the camera and the field for anything missing or malformed.
    """
    if not isinstance(table, Mapping):
        raise camera_error(source, f"expected a table of camera fields, got {table!r}")
    _, name = _first(table, "name")
    name = str(name) if name is not None else default_name
    mkey, matrix = _require(table, "matrix", source, name)
    if matrix.size == 9:
        matrix = matrix.reshape(3, 3)
    if matrix.shape != (3, 3):
        raise camera_error(
            source,
            f"expected a 3x3 camera matrix, got shape {matrix.shape}",
            camera=name,
            field=mkey,
        )
    if not np.allclose(matrix[2], [0, 0, 1]) or matrix[1, 0] != 0:
        raise camera_error(
            source,
            f"expected [[fx, 0, cx], [0, fy, cy], [0, 0, 1]], got {matrix.tolist()}",
            camera=name,
            field=mkey,
        )
    if abs(matrix[0, 1]) > 1e-9 * abs(matrix[0, 0]):
        raise camera_error(
            source, f"skew {matrix[0, 1]} is not supported (must be 0)", camera=name, field=mkey
        )
    model = _model(table, source, name)
    if model == "none" and _first(table, "distortion")[0] is None:
        coef: tuple = ()
    else:
        dkey, dist = _require(table, "distortion", source, name)
        coef = _coefficients(model, dist, dkey, source, name)
    rkey, rot = _require(table, "rotation", source, name)
    if rot.size == 3:
        rot = rvec_to_matrix(rot)
    elif rot.size == 9:
        rot = rot.reshape(3, 3)
    else:
        raise camera_error(
            source,
            f"expected a Rodrigues vector (3) or a 3x3 matrix, got shape {rot.shape}",
            camera=name,
            field=rkey,
        )
    tkey, tvec = _require(table, "translation", source, name)
    if tvec.size != 3:
        raise camera_error(
            source, f"expected 3 numbers, got shape {tvec.shape}", camera=name, field=tkey
        )
    if unit is None:
        unit = table.get("unit")
    return Camera(
        name=name,
        size=_size(table, source, name),
        fx=matrix[0, 0],
        fy=matrix[1, 1],
        cx=matrix[0, 2],
        cy=matrix[1, 2],
        distortion=model,
        coefficients=coef,
        rotation=rot,
        translation=tvec.ravel(),
        unit=unit,
        source=source,
    )
