"""Read and write calibration files, choosing the format from the file's suffix.

Each readable format follows the format contract (:mod:`pipeline.formats.contract`;
:data:`REGISTRY`): ``anipose`` (:mod:`pipeline.cameras.anipose`) and ``opencv``
(:mod:`pipeline.cameras.opencv`); a suffix neither claims goes by content.

=====================  =====================================================  ==========
suffix                 format                                                 write
=====================  =====================================================  ==========
``.toml``              Anipose ``calibration.toml`` or Pose2Sim calibration   yes
``.json``              Anipose layout as JSON, or OpenCV-style JSON           yes (Anipose)
``.yml``, ``.yaml``    OpenCV ``cv2.FileStorage`` YAML or plain YAML          no
=====================  =====================================================  ==========
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pipeline.cameras.anipose import write_json, write_toml
from pipeline.cameras.camera import Camera, camera_error
from pipeline.formats.contract import FormatRegistry, Wording

__all__ = [
    "READ_SUFFIXES",
    "REGISTRY",
    "WRITE_SUFFIXES",
    "match_views",
    "read_calibration",
    "write_calibration",
]

#: The calibration readers' registry.
REGISTRY = FormatRegistry(
    "calibration",
    ("pipeline.cameras.anipose", "pipeline.cameras.opencv"),
    call="read",
    error=lambda where, reason: camera_error(where or "<calibration>", reason),
    wording=Wording(
        unknown_option=(
            "the {name} calibration reader has no option(s) {unknown}; valid options: {valid}"
        ),
        undetected="unknown calibration format {suffix!r}; valid: {suffixes}",
    ),
    trust_suffix=True,
)
READ_SUFFIXES = (".toml", ".json", ".yml", ".yaml")
WRITE_SUFFIXES = (".toml", ".json")


def read_calibration(
    path: str | Path, unit: str | None = None, *, format: str | None = None, **options: Any
) -> list[Camera]:
    """Cameras of a calibration file (Anipose/Pose2Sim TOML, OpenCV-style YAML/JSON).

    Parameters
    ----------
    path : str or Path
    unit : str, optional
        Length unit of the extrinsics (``"m"``, ``"mm"``, ...). When omitted: the unit the
        file records (only files kinefit wrote record one), else ``"unknown"``.
    format : {"anipose", "opencv"}, optional
        Default: by suffix (``.toml``: anipose; ``.json``, ``.yml``, ``.yaml``: opencv),
        else by content.
    **options
        The reader's other keyword options (none today: the call's signature says).

    Returns
    -------
    list of Camera
        In file order, with unique names.

    Raises
    ------
    CameraError
        Unknown format, suffix or option, a file that does not parse, or a missing or
        malformed field (the message names the file, the camera and the field).
    OSError
        The file cannot be read.
    """
    path = Path(path)
    fmt = REGISTRY.pick(path, format)
    options = REGISTRY.check_options(fmt, options, path)
    return fmt.call(path, unit=unit, **options)


def write_calibration(
    path: str | Path, cameras: Sequence[Camera], metadata: Mapping[str, Any] | None = None
) -> Path:
    """Write cameras in the Anipose layout, as TOML (``.toml``) or JSON (``.json``).

    :func:`read_calibration` reads the file back to equal cameras (the rotation through its
    Rodrigues vector, equal to about 1e-15); aniposelib's ``CameraGroup.load`` reads the TOML.

    Returns
    -------
    Path
        The written file.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".toml":
        return write_toml(path, cameras, metadata)
    if suffix == ".json":
        return write_json(path, cameras, metadata)
    raise camera_error(
        str(path), f"cannot write format {suffix!r}; valid: {', '.join(WRITE_SUFFIXES)}"
    )


def match_views(
    cameras: Sequence[Camera], views: Sequence[str], source: str = "<calibration>"
) -> list[Camera]:
    """The calibration's cameras in the order of ``views`` (matched by name).

    Parameters
    ----------
    cameras : sequence of Camera
        A calibration's cameras (any order).
    views : sequence of str
        View names, e.g. the ``--views camA=a.csv camB=b.csv`` keys.
    source : str
        The calibration file, for the error message.

    Returns
    -------
    list of Camera
        ``cameras`` reordered so that entry ``i`` is the camera of ``views[i]``; cameras
        without a view are left out.

    Raises
    ------
    CameraError
        A view without a camera of that name (the message lists the calibration's names),
        or a view named twice.
    """
    by_name = {cam.name: cam for cam in cameras}
    dupes = sorted({v for v in views if list(views).count(v) > 1})
    if dupes:
        raise camera_error(source, f"views named more than once: {', '.join(dupes)}")
    missing = [v for v in views if v not in by_name]
    if missing:
        raise camera_error(
            source,
            f"no camera named {', '.join(map(repr, missing))} for those views; the "
            f"calibration's cameras: {', '.join(map(repr, by_name))}",
        )
    return [by_name[v] for v in views]
