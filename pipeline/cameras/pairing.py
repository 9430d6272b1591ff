"""Pair a session's views (2D files or folders) with a calibration's cameras.

Rules, in order:

1. every view name equals a camera name: paired by name;
2. every view name equals one camera name after normalisation (lower case, separators
   dropped, numbers without leading zeros, a trailing ``json`` dropped: ``cam01_json`` =
   ``cam_01`` = ``Cam01`` = ``cam1``): paired by normalised name;
3. views given without names (their names come from the file or folder names) and as
   many views as cameras: paired in sorted order (as Pose2Sim pairs its folders);

otherwise one :class:`~pipeline.errors.CameraError` lists both sides.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pipeline.cameras.camera import Camera
from pipeline.errors import CameraError, flag

__all__ = ["normalise_camera_name", "pair_views"]

#: How :func:`pair_views` paired the views, as recorded in a store.
BY_NAME, BY_NORMALISED_NAME, BY_SORTED_ORDER = "name", "normalised name", "sorted order"


def normalise_camera_name(name: str) -> str:
    """``"Cam_01"``, ``"cam01_json"``, ``"cam1"`` -> ``"cam1"``."""
    text = re.sub(r"[^0-9a-z]", "", str(name).lower())
    text = re.sub(r"json$", "", text) or text
    return re.sub(r"\d+", lambda m: str(int(m.group())), text)


def _listing(views: Sequence[str], cameras: Sequence[Camera]) -> str:
    return (
        f"views: {', '.join(map(repr, views))}; the calibration's cameras: "
        f"{', '.join(repr(c.name) for c in cameras)}"
    )


def pair_views(
    cameras: Sequence[Camera],
    views: Sequence[str],
    *,
    named: bool = True,
    source: str = "<calibration>",
) -> tuple[list[Camera], str]:
    """The camera of each view, and the rule that paired them (see the module docstring).

    Parameters
    ----------
    cameras : sequence of Camera
        The calibration's cameras (any order).
    views : sequence of str
        View names: as given (``named``) or taken from the file or folder names.
    named : bool
        Whether the user named the views; only unnamed views may pair in sorted order.
    source : str
        The calibration file, for messages.

    Returns
    -------
    (list of Camera, str)
        Entry ``i`` is the camera of ``views[i]``; the rule: ``"name"``,
        ``"normalised name"`` or ``"sorted order"``.

    Raises
    ------
    CameraError
        A view named twice, a view without a camera (or two cameras one normalised name),
        or unnamed views that neither match by name nor are as many as the cameras; the
        message lists the views and the cameras.
    """
    views = [str(v) for v in views]
    dupes = sorted({v for v in views if views.count(v) > 1})
    if dupes:
        raise CameraError(f"{source}: views named more than once: {', '.join(dupes)}")
    by_name = {cam.name: cam for cam in cameras}
    if all(v in by_name for v in views):
        return [by_name[v] for v in views], BY_NAME
    by_norm: dict[str, list[Camera]] = {}
    for cam in cameras:
        by_norm.setdefault(normalise_camera_name(cam.name), []).append(cam)
    keys = [normalise_camera_name(v) for v in views]
    matched = [by_norm.get(k, []) for k in keys]
    clash = [(v, m) for v, m in zip(views, matched, strict=True) if len(m) > 1]
    if clash:
        view, cams = clash[0]
        raise CameraError(
            f"{source}: view {view!r} matches several cameras after normalisation "
            f"({', '.join(repr(c.name) for c in cams)}); name the views exactly; "
            + _listing(views, cameras)
        )
    if all(matched) and len(set(keys)) == len(keys):
        return [m[0] for m in matched], BY_NORMALISED_NAME
    if not named and len(views) == len(cameras):
        order = sorted(range(len(views)), key=lambda i: views[i])
        ranked = sorted(cameras, key=lambda c: c.name)
        out: list[Camera] = [ranked[0]] * len(views)
        for rank, i in enumerate(order):
            out[i] = ranked[rank]
        return out, BY_SORTED_ORDER
    missing = [v for v, m in zip(views, matched, strict=True) if not m]
    what = (
        f"no camera named {', '.join(map(repr, missing))} for those views"
        if missing
        else "views that normalise to the same name"
    )
    hint = (
        f"name each view as its camera ({flag('views', 'CAMERA=PATH')})"
        if named
        else f"{len(views)} views for {len(cameras)} cameras, so sorted order cannot pair them"
    )
    cams = ", ".join(repr(c.name) for c in cameras)
    listed = ", ".join(map(repr, views))
    raise CameraError(
        f"{source}: {what}; the calibration's cameras: {cams}; views: {listed}; {hint}"
    )
