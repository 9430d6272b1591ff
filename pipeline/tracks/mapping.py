"""Which track keypoint observes which body-plan joint.

Keypoints map to joints by name. An explicit map (a dict, or a YAML file of
``track_keypoint: joint_name`` pairs, optionally under a top-level ``keypoints:`` key)
renames track keypoints first. Joints without a track are missing (NaN targets); track
keypoints without a joint are reported once (:class:`UnmappedKeypointWarning`) and listed
on the mapping, never silently dropped; no keypoint mapping to any joint is an error.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from pipeline.errors import flag
from pipeline.tracks.schema import TracksError


class UnmappedKeypointWarning(UserWarning):
    """Track keypoints that observe no joint of the body plan."""


@dataclass(frozen=True)
class KeypointMapping:
    """Resolved keypoint-to-joint map.

    Attributes
    ----------
    joint_names : tuple of str
        The body plan's joints, in tree order.
    keypoint_names : tuple of str
        The track's keypoints, in store order.
    joint_keypoint : tuple of int
        For each joint, the index of its track keypoint, or -1 if it has none.
    renames : dict
        The explicit ``track keypoint -> joint`` renames that were applied.
    """

    joint_names: tuple[str, ...]
    keypoint_names: tuple[str, ...]
    joint_keypoint: tuple[int, ...]
    renames: Mapping[str, str]

    @property
    def missing_joints(self) -> tuple[str, ...]:
        """Joints no track keypoint observes."""
        return tuple(j for j, k in zip(self.joint_names, self.joint_keypoint, strict=True) if k < 0)

    @property
    def unmapped_keypoints(self) -> tuple[str, ...]:
        """Track keypoints that observe no joint."""
        used = set(self.joint_keypoint)
        return tuple(k for i, k in enumerate(self.keypoint_names) if i not in used)

    def pairs(self) -> list[tuple[str, str]]:
        """``(track keypoint, joint)`` pairs in joint order."""
        return [
            (self.keypoint_names[k], j)
            for j, k in zip(self.joint_names, self.joint_keypoint, strict=True)
            if k >= 0
        ]

    def gather(self, values: np.ndarray, axis: int) -> np.ndarray:
        """Reorder ``values`` along ``axis`` from track keypoints to joints.

        Parameters
        ----------
        values : ndarray
            Float array with ``n_keypoints`` entries along ``axis``.
        axis : int

        Returns
        -------
        ndarray
            ``n_joints`` entries along ``axis``; NaN for joints without a track.
        """
        index = np.asarray(self.joint_keypoint)
        out = np.take(values, np.maximum(index, 0), axis=axis).astype(np.float64)
        shape = [1] * out.ndim
        shape[axis] = index.size
        return np.where((index >= 0).reshape(shape), out, np.nan)


def read_name_table(
    path: str | Path,
    *,
    key: str,
    what: str,
    shape_help: str,
    error: type[Exception] = TracksError,
) -> dict[str, str]:
    """Read a YAML mapping of names to names (optionally under a single ``key:``).

    Parameters
    ----------
    path : str or Path
    key : str
        The optional wrapper key (``keypoints``, ``joints``).
    what : str
        What the table is, for messages (``"keypoint map"``).
    shape_help : str
        The message's explanation of the expected shape.
    error : Exception type
        Raised with one message naming the file.

    Returns
    -------
    dict of str to str
    """
    path = Path(path)
    try:
        data: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise error(f"{path}: cannot read the {what} ({exc})") from exc
    if isinstance(data, dict) and set(data) == {key}:
        data = data[key]
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in data.items()
    ):
        raise error(f"{path}: {shape_help}")
    return dict(data)


def load_keypoint_map(path: str | Path) -> dict[str, str]:
    """Read a YAML keypoint map (``track_keypoint: joint``), checking its shape."""
    return read_name_table(
        path,
        key="keypoints",
        what="keypoint map",
        shape_help="a keypoint map is a YAML mapping of track keypoint names to joint "
        "names (optionally under 'keypoints:'), e.g. 'LFCoxa: lf_thorax_coxa'",
    )


def map_keypoints(
    keypoints: Sequence[str],
    joint_names: Sequence[str],
    keypoint_map: Mapping[str, str] | str | Path | None = None,
    *,
    source: str = "<tracks>",
    warn: bool = True,
) -> KeypointMapping:
    """Match track keypoints to body-plan joints.

    Parameters
    ----------
    keypoints : sequence of str
        Track keypoint names.
    joint_names : sequence of str
        Body-plan joint names.
    keypoint_map : mapping, str or Path, optional
        Explicit ``track keypoint -> joint`` renames, or a YAML file of them.
    source : str
        Named in messages (the tracks store).
    warn : bool
        Emit :class:`UnmappedKeypointWarning` for track keypoints without a joint.

    Returns
    -------
    KeypointMapping

    Raises
    ------
    TracksError
        The map names an unknown keypoint or joint, maps two keypoints to one joint, or
        no keypoint maps to any joint (both name sets are listed).
    """
    keypoints, joints = [str(k) for k in keypoints], [str(j) for j in joint_names]
    where = source
    if isinstance(keypoint_map, str | Path):
        where = str(keypoint_map)
        keypoint_map = load_keypoint_map(keypoint_map)
    renames = dict(keypoint_map or {})
    problems = []
    unknown_kp = [k for k in renames if k not in keypoints]
    if unknown_kp:
        problems.append(f"keypoints {unknown_kp} are not in the tracks (tracks have {keypoints})")
    unknown_joint = sorted({v for v in renames.values() if v not in joints})
    if unknown_joint:
        problems.append(f"joints {unknown_joint} are not in the body plan (joints: {joints})")
    targets = [renames.get(k, k) for k in keypoints]
    dupes = sorted({t for t in targets if t in joints and targets.count(t) > 1})
    if dupes:
        problems.append(f"several track keypoints map to the same joint(s) {dupes}")
    if problems:
        raise TracksError(f"{where}: bad keypoint map:\n  - " + "\n  - ".join(problems))
    index = {t: i for i, t in enumerate(targets)}
    joint_keypoint = tuple(index.get(j, -1) for j in joints)
    mapping = KeypointMapping(tuple(joints), tuple(keypoints), joint_keypoint, renames)
    if all(k < 0 for k in joint_keypoint):
        raise TracksError(
            f"{source}: no track keypoint maps to a body-plan joint; pass a keypoint map "
            f"({flag('keypoint_map')}). Track keypoints: {keypoints}. Joints: {joints}"
        )
    if warn and mapping.unmapped_keypoints:
        warnings.warn(
            f"{source}: track keypoints without a joint (not fitted): "
            f"{list(mapping.unmapped_keypoints)}",
            UnmappedKeypointWarning,
            stacklevel=2,
        )
    return mapping


def rename_keypoints(
    ds: Any, keypoint_map: Mapping[str, str] | str | Path, *, source: str = "<tracks>"
) -> Any:
    """Rename a tracks dataset's keypoints (``old: new``), e.g. to body-plan joint names.

    The one keypoint rename of kinefit: the reader registry applies it for the
    ``keypoint_map`` option (``kinefit ingest --keypoint-map``).

    Parameters
    ----------
    ds : xarray.Dataset
        Tracks.
    keypoint_map : mapping, str or Path
        ``track keypoint -> new name`` pairs, or a YAML file of them.
    source : str
        The tracks file, named in messages.

    Returns
    -------
    xarray.Dataset
        With the ``keypoint`` coordinate renamed and the map recorded in
        ``attrs["keypoint_map"]``.

    Raises
    ------
    TracksError
        The map names a keypoint the tracks do not have, or two keypoints end up with
        the same name.
    """
    where = source
    if isinstance(keypoint_map, str | Path):
        where = f"{source} (keypoint map {keypoint_map})"
        keypoint_map = load_keypoint_map(keypoint_map)
    names = [str(k) for k in ds["keypoint"].values.tolist()]
    unknown = [k for k in keypoint_map if k not in names]
    if unknown:
        raise TracksError(
            f"{where}: keypoint map names keypoint(s) {unknown} that the file does not have; "
            f"the file's keypoints: {names}"
        )
    renamed = [str(keypoint_map.get(k, k)) for k in names]
    dupes = sorted({n for n in renamed if renamed.count(n) > 1})
    if dupes:
        raise TracksError(
            f"{where}: keypoint map gives several keypoints the same name "
            f"(duplicated keypoint names {dupes})"
        )
    out = ds.assign_coords(keypoint=np.array(renamed, dtype=object))
    out.attrs["keypoint_map"] = {str(k): str(v) for k, v in keypoint_map.items()}
    return out
