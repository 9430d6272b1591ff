"""Pose2Sim's ``Config.toml`` read for a session: what a multi-view ingest needs from it.

Read (every other section is Pose2Sim's own business and ignored):

- ``project.frame_rate`` (fps; ``"auto"`` or absent: none) and ``project.frame_range``
  (``[]``: every frame; ``[start, stop]``: frames ``start`` to ``stop - 1``, as Pose2Sim
  slices them);
- ``pose.pose_model``: the skeleton of the JSON files (``BODY_25B``, ``BODY_25``,
  ``COCO`` = ``COCO_18``, ``COCO_17``, ``HALPE_26``; others are refused by name);
- ``personAssociation``: ``likelihood_threshold_association``,
  ``single_person.reproj_error_threshold_association``, ``single_person.tracked_keypoint``
  and ``triangulation.min_cameras_for_triangulation``: the person association
  (:class:`pipeline.cameras.association.AssociationSettings`);
- ``triangulation``: ``reproj_error_threshold_triangulation``,
  ``likelihood_threshold_triangulation`` and ``min_cameras_for_triangulation``: the views a
  fit believes per frame and keypoint, as Pose2Sim's triangulation keeps them
  (:class:`pipeline.cameras.view_selection.ViewSelection`);
- the world's up axis: Pose2Sim's calibrations are Z up (its ``.trc`` files turn them
  into OpenSim's Y up), so ``z``;
- the time origin: Pose2Sim's ``.trc`` numbers the frames of the range from 1
  (``Frame# 1``, ``Time = 1 / fps``) and OpenSim's IK ``.mot`` of it keeps those times, so
  ``time_origin="pose2sim"`` (:func:`pipeline.archive.view_files.read_views`): the JSON's
  first frame of the range is at ``1 / fps``, and a fit's exports line up row by row with
  the project's Pose2Sim results. Later Pose2Sim releases write ``Time = frame / fps``
  instead; ``time_origin="frames"`` gives those times.

:func:`pose2sim_reader_options` turns them into reader options of
:func:`pipeline.archive.view_files.read_views`; each problem is one
:class:`~pipeline.errors.ConfigError` naming the file and the field.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pipeline.errors import ConfigError

__all__ = ["POSE_MODELS", "pose2sim_reader_options"]

#: Pose2Sim ``pose_model`` (upper case) -> kinefit skeleton name.
POSE_MODELS: dict[str, str] = {
    "BODY_25B": "BODY_25B",
    "BODY_25": "BODY_25",
    "COCO": "COCO_18",
    "COCO_18": "COCO_18",
    "COCO_17": "COCO_17",
    "HALPE_26": "HALPE_26",
}


def _get(doc: dict, dotted: str) -> Any:
    node: Any = doc
    for key in dotted.split("."):
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def _number(path: Path, field: str, value: Any, kind: type = float) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{path}: {field} = {value!r}: expected a number")
    if kind is int and value != int(value):
        raise ConfigError(f"{path}: {field} = {value!r}: expected a whole number")
    return kind(value)


def pose2sim_reader_options(path: str | Path) -> dict[str, Any]:
    """Reader options of a Pose2Sim ``Config.toml`` (see the module docstring).

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    dict
        ``fps`` (when set), ``skeleton``, ``frame_range`` (when set), ``up_axis="z"``,
        ``time_origin="pose2sim"`` and the ``association_*`` options.

    Raises
    ------
    ConfigError
        Not a TOML file; an unknown ``pose_model``; a bad frame range or threshold.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: no such Pose2Sim config file")
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: not a TOML file ({err})") from None
    out: dict[str, Any] = {"up_axis": "z", "time_origin": "pose2sim"}
    rate = _get(doc, "project.frame_rate")
    if rate is not None and rate != "auto":
        out["fps"] = _number(path, "project.frame_rate", rate)
    model = _get(doc, "pose.pose_model")
    if model is not None:
        key = str(model).upper()
        if key not in POSE_MODELS:
            raise ConfigError(
                f"{path}: pose.pose_model = {model!r}: no kinefit skeleton; valid: "
                + ", ".join(POSE_MODELS)
            )
        out["skeleton"] = POSE_MODELS[key]
    frames = _get(doc, "project.frame_range")
    if frames not in (None, []):
        if not isinstance(frames, list) or len(frames) != 2:
            raise ConfigError(
                f"{path}: project.frame_range = {frames!r}: expected [] or [start, stop]"
            )
        start, stop = (_number(path, "project.frame_range", f, int) for f in frames)
        if not 0 <= start < stop:
            raise ConfigError(
                f"{path}: project.frame_range = {frames!r}: expected 0 <= start < stop"
            )
        out["frame_range"] = (start, stop)
    fields = {
        "association_min_confidence": "personAssociation.likelihood_threshold_association",
        "association_max_error": "personAssociation.single_person."
        "reproj_error_threshold_association",
        "association_min_views": "triangulation.min_cameras_for_triangulation",
        "view_max_error": "triangulation.reproj_error_threshold_triangulation",
        "view_min_confidence": "triangulation.likelihood_threshold_triangulation",
        "view_min_views": "triangulation.min_cameras_for_triangulation",
    }
    for option, dotted in fields.items():
        value = _get(doc, dotted)
        if option in ("view_min_confidence", "view_min_views") and (
            _get(doc, "triangulation.reproj_error_threshold_triangulation") is None
        ):
            continue  # no camera rule without its error threshold
        if value is not None:
            kind = int if option in ("association_min_views", "view_min_views") else float
            out[option] = _number(path, dotted, value, kind)
    tracked = _get(doc, "personAssociation.single_person.tracked_keypoint")
    if tracked is not None:
        out["association_keypoints"] = str(tracked)
    return out
