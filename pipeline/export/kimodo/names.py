"""Name tables from kinefit's built-in body plans onto Kimodo skeletons.

A table maps ``our joint -> Kimodo joint`` (the exporter's ``name_map``). Its inverse,
``Kimodo joint -> our joint``, is the keypoint map that fits an imported constraints file
onto our plan (``kinefit fit --keypoint-map``). Kimodo joints without a partner (SOMA's
``Spine2``, ``Neck2``, ``Jaw`` and eyes; SMPL-X's ``spine2``) keep an identity local
rotation on export and are not fitted on import.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from pipeline.export.kimodo.kimodo_error import KimodoError
from pipeline.tracks.mapping import read_name_table

__all__ = ["NAME_MAPS", "keypoint_map", "name_map"]


def _sided(rows: dict[str, tuple[str, str]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for ours, (left, right) in rows.items():
        out[f"{ours}_l"], out[f"{ours}_r"] = left, right
    return out


_MANNEQUIN_SOMA = {
    "pelvis": "Hips",
    "spine": "Spine1",
    "chest": "Chest",
    "neck": "Neck1",
    "head": "Head",
    **_sided(
        {
            "clavicle": ("LeftShoulder", "RightShoulder"),
            "shoulder": ("LeftArm", "RightArm"),
            "elbow": ("LeftForeArm", "RightForeArm"),
            "wrist": ("LeftHand", "RightHand"),
            "hand": ("LeftHandMiddleEnd", "RightHandMiddleEnd"),
            "thumb": ("LeftHandThumbEnd", "RightHandThumbEnd"),
            "hip": ("LeftLeg", "RightLeg"),
            "knee": ("LeftShin", "RightShin"),
            "ankle": ("LeftFoot", "RightFoot"),
            "toe": ("LeftToeBase", "RightToeBase"),
        }
    ),
}
_MANNEQUIN_SMPLX = {
    "pelvis": "pelvis",
    "spine": "spine1",
    "chest": "spine3",
    "neck": "neck",
    "head": "head",
    **_sided(
        {
            "clavicle": ("left_collar", "right_collar"),
            "shoulder": ("left_shoulder", "right_shoulder"),
            "elbow": ("left_elbow", "right_elbow"),
            "wrist": ("left_wrist", "right_wrist"),
            "hip": ("left_hip", "right_hip"),
            "knee": ("left_knee", "right_knee"),
            "ankle": ("left_ankle", "right_ankle"),
            "toe": ("left_foot", "right_foot"),
        }
    ),
}

#: Built-in tables by (our plan, Kimodo skeleton).
NAME_MAPS: dict[tuple[str, str], Mapping[str, str]] = {
    ("mannequin", "somaskel30"): _MANNEQUIN_SOMA,
    ("mannequin", "somaskel77"): _MANNEQUIN_SOMA,
    ("mannequin", "smplx22"): _MANNEQUIN_SMPLX,
}


def name_map(spec: str | os.PathLike[str], skeleton: str) -> dict[str, str]:
    """Resolve a name map: a built-in plan name (``"mannequin"``) or a YAML file.

    Parameters
    ----------
    spec : str or PathLike
        ``"mannequin"`` for the built-in table onto ``skeleton``, or a YAML file of
        ``our_joint: KimodoJoint`` pairs (optionally under a top-level ``joints:`` key).
    skeleton : str
        Kimodo skeleton name.

    Returns
    -------
    dict
        ``{our joint: Kimodo joint}``.

    Raises
    ------
    KimodoError
        Unknown built-in table, unreadable file, or not a mapping of names.
    """
    key = (str(spec), skeleton)
    if key in NAME_MAPS:
        return dict(NAME_MAPS[key])
    path = Path(os.fspath(spec))
    if not path.exists():
        builtin = ", ".join(f"{a} -> {b}" for a, b in NAME_MAPS)
        raise KimodoError(
            f"{spec}: no such name-map file, and not a built-in table for {skeleton} "
            f"(built-in: {builtin})"
        )
    return read_name_table(
        path,
        key="joints",
        what="name map",
        shape_help="a name map is a YAML mapping of our joint names to Kimodo joint names, "
        "e.g. 'pelvis: Hips'",
        error=KimodoError,
    )


def keypoint_map(table: Mapping[str, str]) -> dict[str, str]:
    """Invert a name table into a keypoint map ``{Kimodo joint: our joint}`` for fitting."""
    return {theirs: ours for ours, theirs in table.items()}
