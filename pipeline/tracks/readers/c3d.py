"""C3D motion-capture marker files (needs ``ezc3d``: the optional extra ``c3d``).

What is read:

- markers: ``data/points`` ``(4, n_points, n_frames)`` with labels ``POINT:LABELS``
  (``LABELS2``... are merged by ezc3d) as keypoints. Points that model outputs put into
  the POINT section (labels listed in ``POINT:ANGLES``, ``FORCES``, ``MOMENTS``,
  ``POWERS``, ``SCALARS``, ``REACTIONS``) are not markers and are left out. A point
  with a negative residual (the C3D "invalid" flag) is missing (NaN).
- rate: ``POINT:RATE`` (the header's frame rate as fallback): the file's rate wins.
- unit: ``POINT:UNITS`` (``"mm"`` usually); ``"unknown"`` when absent.
- up axis: ``POINT:Y_SCREEN`` (the axis shown vertical, e.g. ``"+Z"`` -> ``"z"``);
  ``"z"`` when absent or unreadable (the convention of motion-capture labs writing C3D:
  the floor is the XY plane); the ``up_axis`` option overrides it.
- individuals: when ``SUBJECTS:USES_PREFIXES`` is set and every marker label starts with
  one of ``SUBJECTS:LABEL_PREFIXES`` (Vicon's ``Name:Marker``), each subject is an
  individual and its prefix is stripped; otherwise one individual with the full labels.
- confidence: C3D has none (residuals are fit errors, not confidences): NaN.
- time: ``frame / rate`` seconds from the first frame; the header's (1-based) first frame
  number is kept in attrs as ``first_frame``.
- truncation: ezc3d crashes on some truncated files and silently shortens others, so the
  section sizes are checked against the raw header before ezc3d reads the file.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import xarray as xr

from pipeline.tracks.readers.reader_helpers import fail, missing_extra, resolve_fps
from pipeline.tracks.schema import UP_AXES, make_tracks_dataset
from pipeline.tracks.units import UNKNOWN, canonical_unit

FORMAT = "c3d"
SUFFIXES = (".c3d",)
SOFTWARE = "C3D"
#: POINT parameters that list model outputs stored as points (not markers).
MODEL_OUTPUTS = ("ANGLES", "FORCES", "MOMENTS", "POWERS", "SCALARS", "REACTIONS")


def _param(params: dict, group: str, name: str):
    value = params.get(group, {}).get(name, {}).get("value")
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        return value.tolist()
    return list(value) if isinstance(value, list | tuple) else [value]


#: Up axis of a C3D file whose ``POINT:Y_SCREEN`` does not say one (the labs' convention).
DEFAULT_UP_AXIS = "z"


def _up_axis(y_screen) -> str:
    if not y_screen:
        return DEFAULT_UP_AXIS
    text = str(y_screen[0]).strip().lower()
    axis = text.lstrip("+")
    return axis if axis in UP_AXES else DEFAULT_UP_AXIS


def _split_subjects(labels: list[str], params: dict) -> tuple[list[str], list[str]] | None:
    """Return (individual per label, marker name per label) when subjects prefix labels."""
    uses = _param(params, "SUBJECTS", "USES_PREFIXES")
    prefixes = [str(p) for p in (_param(params, "SUBJECTS", "LABEL_PREFIXES") or []) if str(p)]
    names = [str(n) for n in (_param(params, "SUBJECTS", "NAMES") or [])]
    if not uses or not int(uses[0]) or not prefixes:
        return None
    who, what = [], []
    for label in labels:
        hit = [i for i, p in enumerate(prefixes) if label.startswith(p)]
        if not hit:
            return None
        i = max(hit, key=lambda j: len(prefixes[j]))
        who.append(names[i] if i < len(names) and names[i] else prefixes[i].rstrip(":"))
        what.append(label[len(prefixes[i]) :])
    return who, what


def _check_layout(path: Path) -> tuple[int, int] | None:
    """Check the file is as long as its header says; return (first, last) frame numbers.

    ezc3d crashes or hangs on some truncated files and silently shortens others, so the
    sizes of the parameter and data sections are checked against the raw header before
    ezc3d sees the file. The parameter section's processor byte gives the byte order
    (84 Intel, 85 DEC, 86 MIPS big-endian). Files with more than 65535 frames saturate
    the header's last frame: their data section is not checked (None is returned).
    """
    size = path.stat().st_size
    with open(path, "rb") as handle:
        head = handle.read(512)
        if len(head) < 512:
            raise fail(path, f"truncated file: {size} bytes, shorter than the C3D header")
        param_start = (head[0] - 1) * 512
        handle.seek(param_start)
        section = handle.read(4)
    if head[0] < 2 or len(section) < 4 or section[3] not in (84, 85, 86):
        raise fail(path, "not a C3D file: no parameter section where the header points")
    order = ">" if section[3] == 86 else "<"
    n_points, n_analog, first, last = struct.unpack(order + "HHHH", head[2:10])
    data_start = (struct.unpack(order + "H", head[16:18])[0] - 1) * 512
    sign_byte = {84: 15, 85: 13, 86: 12}[section[3]]
    bytes_per_value = 4 if head[sign_byte] & 0x80 else 2  # negative scale: float data
    need = param_start + section[2] * 512
    span = None if last == 65535 or last < first else (first, last)
    if span is not None:
        frame_bytes = (4 * n_points + n_analog) * bytes_per_value
        need = max(need, data_start + (last - first + 1) * frame_bytes)
    if size < need:
        raise fail(
            path,
            f"truncated file: {size} bytes, the header announces {need}"
            + (f" (frames {first}..{last})" if span is not None else ""),
        )
    return span


def parse(path: str | Path, *, include_model_outputs: bool = False) -> dict:
    """Read a C3D file's markers into arrays.

    Returns
    -------
    dict
        ``position (n_frames, 3, n_keypoints, n_individuals)``, ``keypoints``,
        ``individuals`` (None for one unnamed individual), ``rate`` (or None), ``unit``,
        ``up_axis``, ``first_frame``.
    """
    path = Path(path)
    try:
        import ezc3d
    except ImportError:
        raise missing_extra(path, "C3D", "c3d", "ezc3d") from None
    span = _check_layout(path)
    try:
        c3d = ezc3d.c3d(str(path))
    except Exception as err:  # ezc3d raises bare RuntimeError/IOError on corrupt files
        raise fail(path, f"not a readable C3D file (truncated or corrupt?): {err}") from None
    params = c3d["parameters"]
    points = np.asarray(c3d["data"]["points"], dtype=np.float64)
    if points.ndim != 3 or points.shape[0] < 3 or points.shape[1] == 0:
        raise fail(path, f"no marker data (points array of shape {points.shape})")
    n_points, n_frames = points.shape[1], points.shape[2]
    if n_frames == 0:
        raise fail(path, "no frames")
    if span is not None and n_frames < span[1] - span[0] + 1:
        raise fail(
            path,
            f"truncated file: the header announces frames {span[0]}..{span[1]} "
            f"({span[1] - span[0] + 1}) but only {n_frames} could be read",
        )
    labels = [str(s).strip() for s in (_param(params, "POINT", "LABELS") or [])]
    if len(labels) < n_points:
        raise fail(path, f"{n_points} points but only {len(labels)} POINT:LABELS")
    labels = labels[:n_points]
    residuals = c3d["data"].get("meta_points", {}).get("residuals")
    xyz = points[:3]
    if residuals is not None and np.shape(residuals)[-2:] == (n_points, n_frames):
        xyz = np.where(np.asarray(residuals)[0] < 0, np.nan, xyz)
    keep = list(range(n_points))
    if not include_model_outputs:
        outputs = set()
        for name in MODEL_OUTPUTS:
            outputs |= {str(v).strip() for v in (_param(params, "POINT", name) or [])}
        keep = [i for i in keep if labels[i] not in outputs]
        if not keep:
            raise fail(path, "every POINT is a model output (angles, forces, ...); no markers")
    labels = [labels[i] for i in keep]
    xyz = xyz[:, keep]  # (3, n_markers, n_frames)
    split = _split_subjects(labels, params)
    individuals: list[str] | None = None
    if split is None:
        keypoints, who = labels, [None] * len(labels)
    else:
        who, keypoints = split
        individuals = list(dict.fromkeys(who))
    names = list(dict.fromkeys(keypoints))
    pairs = list(zip(who, keypoints, strict=True))
    dupes = sorted({f"{w or ''}{k}" for w, k in pairs if pairs.count((w, k)) > 1})
    if dupes:
        raise fail(path, f"duplicated marker labels {dupes}")
    ind_index = individuals or [None]
    position = np.full((n_frames, 3, len(names), len(ind_index)), np.nan)
    for m, (w, k) in enumerate(pairs):
        position[:, :, names.index(k), ind_index.index(w)] = xyz[:, m, :].T
    rate = _param(params, "POINT", "RATE")
    rate = float(rate[0]) if rate else float(c3d["header"]["points"].get("frame_rate") or 0)
    units = _param(params, "POINT", "UNITS")
    return {
        "position": position,
        "keypoints": names,
        "individuals": individuals,
        "rate": rate if rate > 0 else None,
        "unit": canonical_unit(units[0]) if units else UNKNOWN,
        "up_axis": _up_axis(_param(params, "POINT", "Y_SCREEN")),
        "first_frame": span[0] if span is not None else None,
    }


def sniff(path: str | Path) -> bool:
    """Return True when byte 2 of the header is the C3D key 0x50."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(2)
    except OSError:
        return False
    return len(head) == 2 and head[1] == 0x50 and head[0] >= 2


def read(
    path: str | Path, *, fps: float | None = None, include_model_outputs: bool = False
) -> xr.Dataset:
    """Read the markers of a C3D file.

    Parameters
    ----------
    path : str or Path
        The ``.c3d`` file.
    fps : float, optional
        Used only when the file has no point rate.
    include_model_outputs : bool
        Keep points listed as angles, forces, moments, ... (default: markers only).

    Returns
    -------
    xarray.Dataset
        ``position (time, space=[x, y, z], keypoint, individual)`` in the file's unit
        (``POINT:UNITS``), up axis from ``POINT:Y_SCREEN``, confidence NaN, ``time`` in
        seconds at the file's rate.

    Raises
    ------
    TracksError
        Unreadable or truncated file, no markers, labels missing or duplicated, no rate
        in the file nor ``fps``; also when ezc3d is not installed (extra ``c3d``).
    """
    path = Path(path)
    arrays = parse(path, include_model_outputs=include_model_outputs)
    rate = resolve_fps(path, SOFTWARE, arrays["rate"], fps)
    return make_tracks_dataset(
        arrays["position"],
        None,
        keypoints=arrays["keypoints"],
        individuals=arrays["individuals"],
        fps=rate,
        space=("x", "y", "z"),
        source_software=SOFTWARE,
        source_file=path,
        unit=arrays["unit"],
        up_axis=arrays["up_axis"],
        extra_attrs={"source_format": FORMAT, "first_frame": arrays["first_frame"]},
    )
