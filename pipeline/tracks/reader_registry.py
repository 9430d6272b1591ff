"""Reader registry: pick a tracks reader, check its options, apply the shared ones.

Each reader is a module in :mod:`pipeline.tracks.readers` following the format contract
(:mod:`pipeline.formats.contract`; :data:`REGISTRY` is the readers' registry), exposing

- ``FORMAT: str``: the name users pass as ``format=`` (``--format`` on the CLI);
- ``SUFFIXES: tuple[str, ...]``: lower-case file suffixes it may read (``".nc"``);
- ``sniff(path) -> bool``: cheap check that the file really is this format;
- ``read(path, *, <explicit options>) -> xarray.Dataset``: the tracks dataset, with the
  unit and up axis the file records (``"unknown"`` / None when it does not). Every option
  is a keyword-only parameter with a default; ``fps`` is one for readers whose files may
  not record the frame rate.

The registry lists a reader's valid options from that signature
(:func:`reader_options`), refuses any other with a message that lists them, and applies
the options every format shares (:data:`SHARED_OPTIONS`) once, after reading: ``unit``
and ``up_axis`` override what the file records, ``session`` names the session and
``keypoint_map`` renames keypoints (:func:`pipeline.tracks.mapping.rename_keypoints`).
Units are spelled one way (:func:`pipeline.tracks.units.canonical_unit`) and
``to_unit=`` converts lengths (:func:`pipeline.tracks.units.convert_length`).

To add a format, write the module and append its dotted name to :data:`READER_MODULES`.
Modules are imported only when needed, so a reader's optional dependency is imported
inside its ``read``.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import xarray as xr

from pipeline.errors import flag
from pipeline.formats.contract import Format, FormatRegistry, Wording
from pipeline.tracks.mapping import rename_keypoints
from pipeline.tracks.readers.reader_helpers import damage
from pipeline.tracks.schema import UP_AXES, TracksError, validate_tracks
from pipeline.tracks.session_names import check_session_name
from pipeline.tracks.units import UNKNOWN, canonical_unit, check_unit, convert_length

#: Reader modules, in sniffing priority order.
READER_MODULES: tuple[str, ...] = (
    "pipeline.tracks.readers.movement",
    "pipeline.tracks.readers.npz",
    "pipeline.tracks.readers.lightningpose",
    "pipeline.tracks.readers.dlc",
    "pipeline.tracks.readers.sleap",
    "pipeline.tracks.readers.slp",
    "pipeline.tracks.readers.anipose",
    "pipeline.tracks.readers.nwb",
    "pipeline.tracks.readers.c3d",
    "pipeline.tracks.readers.trc",
    "pipeline.tracks.readers.bvh",
    "pipeline.tracks.readers.csv",
    "pipeline.tracks.readers.openpose",
    "pipeline.tracks.readers.kimodo",
)
#: Options every reader accepts; the registry applies them after ``read``.
SHARED_OPTIONS: tuple[str, ...] = ("keypoint_map", "session", "unit", "up_axis")


def _error(where: str | None, reason: str) -> TracksError:
    return TracksError(f"{where}: {reason}" if where else reason)


#: The tracks readers' registry (:mod:`pipeline.formats.contract`).
REGISTRY = FormatRegistry(
    "tracks",
    READER_MODULES,
    call="read",
    error=_error,
    wording=Wording(
        unknown_format="unknown tracks format {name!r}; valid formats: {formats}",
        unknown_option="the {name} reader has no option(s) {unknown}; valid options: {valid}",
        undetected=(
            "cannot tell the tracks format ({hint}); pass {format_flag}, valid formats: {formats}"
        ),
        claimed="readers for its suffix ({claimants}) do not recognize it",
    ),
    shared=SHARED_OPTIONS,
    hidden=("fps",),
)


def readers() -> dict[str, ModuleType]:
    """Return the reader modules by ``FORMAT`` name, in priority order."""
    return {name: fmt.declaration for name, fmt in REGISTRY.formats().items()}


def _format(module: ModuleType) -> Format:
    return REGISTRY.get(module.FORMAT)


def reader_options(module: ModuleType) -> tuple[str, ...]:
    """The options a reader's ``read`` takes (its keyword-only parameters but ``fps``)."""
    return REGISTRY.options(_format(module))


def valid_options(module: ModuleType) -> tuple[str, ...]:
    """Every option ``read_tracks`` accepts for ``module``, sorted: its own and the shared."""
    return REGISTRY.valid_options(_format(module))


def check_options(
    path: str | Path, module: ModuleType, options: Mapping[str, Any]
) -> dict[str, Any]:
    """``options`` checked: names the reader takes, values of the types its ``read`` declares.

    Raises the tracks error naming the first unknown option (listing the valid ones) or
    the first value of the wrong type (:meth:`.FormatRegistry.check_values`).
    """
    return REGISTRY.check_options(_format(module), options, path)


def describe_formats() -> str:
    """``"movement (.nc, .zarr); npz (.npz); ..."``: the formats and their suffixes."""
    return REGISTRY.describe()


def pick_reader(path: str | Path, format: str | None = None) -> ModuleType:
    """Return the reader module for ``path``.

    Parameters
    ----------
    path : str or Path
        Tracks file or directory.
    format : str, optional
        Reader name; default: chosen by suffix, then by sniffing the content.

    Raises
    ------
    TracksError
        Unknown ``format`` or no reader recognizes the file; the message lists the valid
        formats and their suffixes.
    """
    return REGISTRY.pick(Path(path), format).declaration


def with_fps(
    ds: xr.Dataset, fps: float | None, source: str, *, force_fps: bool = False
) -> xr.Dataset:
    """Settle the frame rate: the file's own rate wins, ``fps`` fills in when it has none.

    A frame-numbered time coordinate is converted to seconds. An explicit ``fps`` that
    disagrees with the rate the file records is ignored with a warning naming both values
    (a lab-wide ``--fps`` or config ``fps`` must not rescale files that know better).

    Raises
    ------
    TracksError
        Neither the file nor ``fps`` gives a frame rate, or ``fps`` is not positive.
    """
    if fps is not None:
        fps = float(fps)
        if not np.isfinite(fps) or fps <= 0:
            raise TracksError(f"{source}: fps must be a positive number, got {fps!r}")
    own = ds.attrs.get("fps")
    if force_fps:
        if fps is None:
            raise TracksError(f"{source}: force_fps (--force-fps) needs fps= (--fps)")
        if own is not None and ds.attrs.get("time_unit") != "frames":
            # the file's clock is wrong: its frames are 1/fps apart, its rate is kept beside
            time = np.asarray(ds["time"].values, dtype=np.float64) * (float(own) / fps)
            ds = ds.assign_coords(time=time)
            ds.attrs.update(file_fps=float(own))
            ds.attrs.pop("fps")
            own = None
    if own is not None and fps is not None and not np.isclose(float(own), fps, rtol=1e-9):
        warnings.warn(
            f"{source}: the file records {float(own):g} fps; ignoring fps={fps:g} "
            "(a file's own frame rate wins; force_fps / --force-fps overrides it)",
            UserWarning,
            stacklevel=3,
        )
    rate = float(own) if own is not None else fps
    if rate is None:
        raise TracksError(
            f"{source}: the frame rate is unknown (attrs.fps missing); pass {flag('fps')}"
        )
    if ds.attrs.get("time_unit") == "frames":
        time = np.asarray(ds["time"].values, dtype=np.float64) / rate
        ds = ds.assign_coords(time=time)
    elif own is not None:
        return ds
    ds.attrs.update(fps=rate, time_unit="seconds")
    return ds


def check_fps_option(fps: Any, source: str) -> float | None:
    """``fps`` as a float, or refused if it is not a positive finite number."""
    if fps is None:
        return None
    try:
        rate = float(fps)
    except (TypeError, ValueError):
        rate = float("nan")
    if not np.isfinite(rate) or rate <= 0:
        raise TracksError(f"{source}: fps must be a positive number, got {fps!r}")
    return rate


def check_shared_options(source: str, shared: Mapping[str, Any]) -> dict[str, Any]:
    """Check the options every reader shares before the file is read.

    ``unit`` must be a unit name kinefit knows (or an alias), ``up_axis`` one of
    ``x, y, z, -x, -y, -z``, ``session`` a safe session name, ``keypoint_map`` a file or
    a mapping (checked against the file's keypoints after reading).

    Returns
    -------
    dict
        The options, ``unit`` in kinefit's spelling.

    Raises
    ------
    TracksError
        The first invalid option, named with its valid values.
    """
    out = dict(shared)
    if out.get("unit") is not None:
        out["unit"] = check_unit(out["unit"], "option 'unit'", source)
    up_axis = out.get("up_axis")
    if up_axis is not None and up_axis not in UP_AXES:
        raise TracksError(
            f"{source}: option 'up_axis': {up_axis!r} is not one of {', '.join(UP_AXES)}"
        )
    kmap = out.get("keypoint_map")
    if kmap is not None and not isinstance(kmap, str | Path | Mapping):
        raise TracksError(
            f"{source}: option 'keypoint_map': {kmap!r} is not a keypoint map; give a YAML "
            f"file of 'track name: plan name' lines"
        )
    if out.get("session") is not None:
        try:
            check_session_name(out["session"], f"{source}: option 'session'")
        except ValueError as exc:
            raise TracksError(str(exc)) from None
    return out


def apply_shared_options(
    ds: xr.Dataset,
    source: str,
    *,
    unit: str | None = None,
    up_axis: str | None = None,
    session: str | None = None,
    keypoint_map: Mapping[str, str] | str | Path | None = None,
) -> xr.Dataset:
    """Apply the options every reader shares (see the module docstring).

    ``unit`` replaces the unit the file records (a warning names both when the file
    records another known unit: the numbers are not converted, see ``to_unit``); the
    result's unit is always spelled canonically (``"px"``, ``"unknown"``).

    Raises
    ------
    TracksError
        ``up_axis`` is not one of ``x, y, z, -x, -y, -z``; the keypoint map names a
        keypoint the file lacks or makes two keypoints share a name.
    """
    attrs = dict(ds.attrs)
    own = canonical_unit(attrs.get("unit"))
    if unit is not None:
        given = canonical_unit(unit)
        if own not in (UNKNOWN, given):
            warnings.warn(
                f"{source}: the file records unit {own!r}; recording unit={given!r} as given "
                f"(lengths are not converted: use {flag('to_unit')} to convert)",
                UserWarning,
                stacklevel=3,
            )
        own = given
    attrs["unit"] = own
    if up_axis is not None:
        if up_axis not in UP_AXES:
            raise TracksError(
                f"{source}: option 'up_axis': {up_axis!r} is not one of {', '.join(UP_AXES)}"
            )
        attrs["up_axis"] = up_axis
    if session is not None:
        attrs["session"] = str(session)
    ds.attrs = attrs
    if keypoint_map:
        ds = rename_keypoints(ds, keypoint_map, source=source)
    return ds


def _raise_if_damaged(path: Path, exc: Exception) -> None:
    """Report a file no reader could read as damaged when it is (not as an unknown format)."""
    reason = damage(path)
    if reason is not None:
        raise TracksError(f"{path}: {reason}") from exc


def read_tracks(
    path: str | Path,
    format: str | None = None,
    *,
    fps: float | None = None,
    to_unit: str | None = None,
    force_fps: bool = False,
    **options: Any,
) -> xr.Dataset:
    """Read a tracks file of any registered format into the movement poses schema.

    Parameters
    ----------
    path : str or Path
        Tracks file (or zarr directory).
    format : str, optional
        Reader name (see :func:`readers`); default by suffix and content.
    fps : float, optional
        Frames per second; required when the file does not record it.
    force_fps : bool
        ``fps`` replaces the rate the file records (its time stamps are rescaled; the
        file's own rate is kept as the ``file_fps`` attr).
    to_unit : str, optional
        Convert ``position`` to this length unit (``"m"``, ``"mm"``, ...); the file's
        unit (or ``unit=``) must be a known length unit.
    **options
        The reader's own options (:func:`reader_options`) and the shared ones
        (:data:`SHARED_OPTIONS`: ``unit``, ``up_axis``, ``session``, ``keypoint_map``).

    Returns
    -------
    xarray.Dataset
        Validated tracks (:func:`pipeline.tracks.schema.validate_tracks`) with a known
        ``fps`` and ``time`` in seconds.

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    TracksError
        Unknown format or option (the message lists the valid ones), malformed content,
        unknown frame rate, or a unit that cannot be converted.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such tracks file")
    try:
        module = pick_reader(path, format)
    except TracksError as exc:
        _raise_if_damaged(path, exc)
        raise
    options = check_options(path, module, options)
    shared = check_shared_options(
        str(path), {k: options.pop(k) for k in SHARED_OPTIONS if k in options}
    )
    fps = check_fps_option(fps, str(path))
    if to_unit is not None:
        to_unit = check_unit(to_unit, flag("to_unit").rstrip("="), str(path), convertible=True)
    if "fps" in inspect.signature(module.read).parameters:
        options["fps"] = fps
    try:
        ds = module.read(path, **options)
    except TracksError as exc:
        _raise_if_damaged(path, exc)
        raise
    ds = validate_tracks(ds, source=str(path))
    ds = apply_shared_options(ds, str(path), **shared)
    ds = with_fps(ds, fps, str(path), force_fps=force_fps)
    if to_unit is not None:
        ds = convert_length(ds, to_unit, str(path))
    return ds
