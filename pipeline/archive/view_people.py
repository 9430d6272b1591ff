"""Which person of a multi-view session to keep: reader options to an association.

The options (``-O key=value`` on ``kinefit ingest --views``, or keyword arguments of
:func:`pipeline.archive.view_files.read_views`):

- ``person_id``: follow the detections the tracker numbered with this id in every view
  (:func:`pipeline.cameras.association.follow_person_id`);
- ``associate``: ``true`` (default) matches the candidates of views whose individuals are
  per-frame detections by reprojection consistency
  (:func:`pipeline.cameras.association.select_people`); ``false`` keeps every candidate;
- ``association_keypoints`` (comma-separated names), ``association_max_error`` (px),
  ``association_min_confidence``, ``association_min_views``: the
  :class:`~pipeline.cameras.association.AssociationSettings`.

Views whose individuals are already one person across frames (every reader but the
OpenPose-style one) are kept as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import xarray as xr

from pipeline.cameras.association import AssociationSettings, follow_person_id, select_people
from pipeline.errors import ConfigError

__all__ = ["PEOPLE_OPTIONS", "PeopleChoice", "match_people", "people_options"]

PEOPLE_OPTIONS: tuple[str, ...] = (
    "person_id",
    "associate",
    "association_keypoints",
    "association_max_error",
    "association_min_confidence",
    "association_min_views",
)


@dataclass(frozen=True)
class PeopleChoice:
    """How to choose the person of a multi-view session (see the module docstring)."""

    person_id: int | None = None
    associate: bool = True
    settings: AssociationSettings = AssociationSettings()


def _number(source: str, key: str, value: Any, kind: type) -> Any:
    try:
        out = kind(value)
    except (TypeError, ValueError):
        raise ConfigError(
            f"{source}: option {key}={value!r} is not a{'n integer' if kind is int else ' number'}"
        ) from None
    if kind is int and str(value).strip() not in (str(out), f"{out}.0") and value != out:
        raise ConfigError(f"{source}: option {key}={value!r} is not an integer")
    return out


def _flag(source: str, key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text not in ("true", "false", "yes", "no", "1", "0"):
        raise ConfigError(f"{source}: option {key}={value!r}; valid: true, false")
    return text in ("true", "yes", "1")


def people_options(options: dict[str, Any], source: str) -> PeopleChoice:
    """Pop the people options out of ``options`` (reader options) into a choice.

    Raises
    ------
    ConfigError
        A value of the wrong type, or ``person_id`` with ``associate=false``.
    """
    got = {k: options.pop(k) for k in PEOPLE_OPTIONS if k in options}
    person = got.get("person_id")
    person_id = None if person is None else _number(source, "person_id", person, int)
    associate = _flag(source, "associate", got.get("associate", True))
    keypoints = got.get("association_keypoints")
    if isinstance(keypoints, str):
        keypoints = tuple(k.strip() for k in keypoints.split(",") if k.strip())
    elif keypoints is not None:
        keypoints = tuple(map(str, keypoints))
    defaults = AssociationSettings()
    settings = AssociationSettings(
        keypoints=keypoints or None,
        max_error=_number(
            source,
            "association_max_error",
            got.get("association_max_error", defaults.max_error),
            float,
        ),
        min_confidence=_number(
            source,
            "association_min_confidence",
            got.get("association_min_confidence", defaults.min_confidence),
            float,
        ),
        min_views=_number(
            source,
            "association_min_views",
            got.get("association_min_views", defaults.min_views),
            int,
        ),
    )
    if person_id is not None and not associate:
        raise ConfigError(f"{source}: option person_id={person_id} needs associate=true")
    return PeopleChoice(person_id, associate, settings)


def match_people(ds: xr.Dataset, choice: PeopleChoice) -> xr.Dataset:
    """``ds`` reduced to one person as ``choice`` says, or as it is.

    Raises
    ------
    TracksError
        ``person_id`` not in every view (the message lists the ids each view has).
    """
    if choice.person_id is not None:
        return follow_person_id(ds, choice.person_id)
    if ds.attrs.get("individuals_associated") is False and choice.associate:
        return select_people(ds.drop_vars("person_id", errors="ignore"), choice.settings)
    return ds
