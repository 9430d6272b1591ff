"""Kimodo skeletons: read a definition from a skeletons JSON file, build its body plan.

The skeletons file (``skeletons.json``) maps a skeleton name (``somaskel30``,
``somaskel77``, ``g1skel34``, ``smplx22``) to ``joint_names``, ``parent_indices``,
``rest_positions_m_root_relative`` (Kimodo's ``joints.p``: bone offsets are
``rest[j] - rest[parent(j)]``; ``rest_offsets_from_parent_m`` serves when it is absent),
the four end-effector chains and ``hip_pair_right_left``. Keys starting with ``_`` are
comments. It is input data: users pass their own copy.

Kimodo's convention (Kimodo format, part 3): metres, +Y up, facing +Z at heading 0; every
joint carries a full local rotation ``R_j``; ``G_root = R_root``, ``G_j = G_parent R_j``,
``p_j = p_parent + G_parent o_j``. :func:`kimodo_body_plan` expresses exactly that as a
version-2 body plan: same joint names and order, ``offset_pos = o_j``, identity
``offset_quat``, a free base whose orientation is ``R_root``, and a ``ball`` joint (no
limits) on every other joint that has children. Leaf joints (``HeadEnd``, ``*End``,
``*ToeBase``, ``smplx22``'s wrists and feet) are ``fixed``: their rotation moves no
position, so a position fit could not observe it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.bodyplan import BodyPlan, load_body_plan
from pipeline.export.kimodo.kimodo_error import KimodoError

__all__ = [
    "EE_NAMES",
    "KimodoSkeleton",
    "kimodo_body_plan",
    "load_kimodo_skeleton",
    "skeleton_names",
]

#: End-effector names a Kimodo ``end-effector`` entry may list in ``joint_names``.
EE_NAMES: tuple[str, ...] = ("LeftHand", "RightHand", "LeftFoot", "RightFoot", "Hips")
#: SOMA skeletons are interchangeable by joint name (Kimodo format, part 3).
SOMA_FAMILY: tuple[str, ...] = ("somaskel30", "somaskel77")
_CHAINS = ("left_hand_chain", "right_hand_chain", "left_foot_chain", "right_foot_chain")
_REQUIRED = ("joint_names", "parent_indices", "hip_pair_right_left")


@dataclass(frozen=True, eq=False)
class KimodoSkeleton:
    """A Kimodo skeleton definition (metres, +Y up, facing +Z).

    Attributes
    ----------
    name : str
        ``somaskel30``, ``g1skel34``, ...
    joint_names : tuple of str
        In Kimodo's order (parents first); arrays of a constraints file follow it.
    parents : (J,) int array
        Parent index of each joint, -1 for the root (index 0).
    offsets : (J, 3) float array
        Rest offset from the parent (m); zero for the root.
    chains : dict
        ``LeftHand``/``RightHand``/``LeftFoot``/``RightFoot`` to the chain's joint names
        (positions constrained on all of them, the rotation on the first); ``Hips`` to
        the root alone.
    hip_pair : (str, str)
        ``(right, left)`` hip joints; the heading comes from them.
    source : str
        File the definition was read from.
    """

    name: str
    joint_names: tuple[str, ...]
    parents: np.ndarray
    offsets: np.ndarray
    chains: Mapping[str, tuple[str, ...]]
    hip_pair: tuple[str, str]
    source: str = field(default="<memory>")

    @property
    def n_joints(self) -> int:
        """Number of joints ``J``."""
        return len(self.joint_names)

    @property
    def root(self) -> str:
        """Name of the root joint."""
        return self.joint_names[0]

    def index(self, name: str) -> int:
        """Index of joint ``name``."""
        return self.joint_names.index(name)

    def children(self, j: int) -> list[int]:
        """Indices of joint ``j``'s children."""
        return [int(c) for c in np.flatnonzero(self.parents == j)]

    @property
    def rest_positions(self) -> np.ndarray:
        """``(J, 3)`` global rest positions with the root at the origin (m)."""
        out = np.zeros((self.n_joints, 3))
        for j in range(1, self.n_joints):
            out[j] = out[self.parents[j]] + self.offsets[j]
        return out

    @property
    def hip_indices(self) -> tuple[int, int]:
        """``(right, left)`` hip joint indices."""
        return self.index(self.hip_pair[0]), self.index(self.hip_pair[1])


def _fail(file: str, what: str, name: str | None = None, key: str | None = None) -> KimodoError:
    where = file + (f": skeleton {name!r}" if name else "") + (f": {key}" if key else "")
    return KimodoError(f"{where}: {what}")


def skeleton_names(data: Mapping[str, Any]) -> list[str]:
    """Names of the skeletons in a decoded skeletons file (keys not starting with ``_``)."""
    return [k for k in data if not k.startswith("_")]


def _read_json(path: Path) -> Any:
    file = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise _fail(file, "skeleton file not found (pass --skeleton-file)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail(file, f"cannot read the skeleton file ({exc})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise _fail(
            file, f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None


def _names(value: Any, file: str, name: str, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail(file, "expected a list of joint names", name, key)
    return tuple(value)


def _offsets(raw: Mapping[str, Any], parents: np.ndarray, file: str, name: str) -> np.ndarray:
    """Bone offsets ``rest[j] - rest[parent(j)]``, root zero.

    From the global rest positions (Kimodo's ``joints.p``), else from
    ``rest_offsets_from_parent_m``.
    """
    n = parents.size
    key = next(
        (k for k in ("rest_positions_m_root_relative", "rest_offsets_from_parent_m") if k in raw),
        None,
    )
    if key is None:
        raise _fail(file, "missing field", name, "rest_positions_m_root_relative")
    try:
        values = np.asarray(raw[key], dtype=np.float64)
    except (TypeError, ValueError):
        raise _fail(file, "expected numbers", name, key) from None
    if values.shape != (n, 3) or not np.all(np.isfinite(values)):
        raise _fail(file, f"expected {n} finite [x, y, z] rows", name, key)
    if key == "rest_positions_m_root_relative":
        values = values - values[np.maximum(parents, 0)]
    values[0] = 0.0  # only root_positions places the root (Kimodo format, part 3)
    return values


def load_kimodo_skeleton(path: str | os.PathLike[str], name: str) -> KimodoSkeleton:
    """Read skeleton ``name`` from a Kimodo skeletons JSON file.

    Parameters
    ----------
    path : str or PathLike
        The skeletons file (``skeletons.json``).
    name : str
        Skeleton name, e.g. ``"somaskel30"``.

    Returns
    -------
    KimodoSkeleton

    Raises
    ------
    KimodoError
        Missing or unreadable file, unknown skeleton (the valid names are listed), or a
        definition with missing or inconsistent fields.
    """
    path = Path(os.fspath(path))
    file = str(path)
    data = _read_json(path)
    if not isinstance(data, dict):
        raise _fail(file, "expected a JSON object of skeletons by name")
    valid = skeleton_names(data)
    if name not in valid:
        raise _fail(file, f"unknown skeleton {name!r}; skeletons in the file: {', '.join(valid)}")
    raw = data[name]
    if not isinstance(raw, dict):
        raise _fail(file, "expected an object", name)
    for key in _REQUIRED:
        if key not in raw:
            raise _fail(file, "missing field", name, key)
    joints = _names(raw["joint_names"], file, name, "joint_names")
    n = len(joints)
    if n == 0 or len(set(joints)) != n:
        raise _fail(file, "joint names must be non-empty and unique", name, "joint_names")
    try:
        parents = np.asarray(raw["parent_indices"], dtype=np.int64)
    except (TypeError, ValueError):
        raise _fail(file, "expected integers", name, "parent_indices") from None
    if parents.shape != (n,) or parents[0] != -1 or np.any(parents[1:] < 0):
        raise _fail(file, f"expected {n} indices, -1 only for joint 0", name, "parent_indices")
    if np.any(parents[1:] >= np.arange(1, n)):
        raise _fail(file, "every parent must come before its child", name, "parent_indices")
    offsets = _offsets(raw, parents, file, name)
    chains: dict[str, tuple[str, ...]] = {}
    for key, ee in zip(_CHAINS, EE_NAMES[:4], strict=True):
        chain = _names(raw.get(key, []), file, name, key)
        unknown = [c for c in chain if c not in joints]
        if not chain or unknown:
            raise _fail(file, f"expected a non-empty list of its joints, got {chain}", name, key)
        chains[ee] = chain
    chains["Hips"] = (joints[0],)
    hips = _names(raw["hip_pair_right_left"], file, name, "hip_pair_right_left")
    if len(hips) != 2 or any(h not in joints for h in hips):
        raise _fail(file, f"expected [right, left] joint names, got {hips}", name, "hip_pair")
    parents.flags.writeable = False
    offsets.flags.writeable = False
    return KimodoSkeleton(name, joints, parents, offsets, chains, (hips[0], hips[1]), file)


def _twist_axis(skeleton: KimodoSkeleton, j: int, rest: np.ndarray) -> list[float]:
    """Unit direction from joint ``j`` to the mean of its descendants (the limb), else +Y."""
    below = [k for k in range(j + 1, skeleton.n_joints) if _is_below(skeleton, k, j)]
    direction = rest[below].mean(axis=0) - rest[j] if below else np.zeros(3)
    norm = float(np.linalg.norm(direction))
    if norm < 1e-6:
        return [0.0, 1.0, 0.0]
    return [float(v) for v in direction / norm]


def _is_below(skeleton: KimodoSkeleton, k: int, j: int) -> bool:
    while k > j:
        k = int(skeleton.parents[k])
    return k == j


def kimodo_body_plan(skeleton: KimodoSkeleton) -> BodyPlan:
    """Build the version-2 body plan whose forward kinematics is Kimodo's.

    Parameters
    ----------
    skeleton : KimodoSkeleton

    Returns
    -------
    BodyPlan
        Free base (its orientation is Kimodo's ``R_root``), joint names and order as in
        the skeleton, ``offset_pos`` the rest offsets (m), identity ``offset_quat``. The
        root and the leaf joints are ``fixed``; every other joint is an unlimited
        ``ball`` whose twist axis points from the joint to the mean rest position of its
        descendants (so the swing-twist singularity, a 180 degree swing, is a limb folded
        back on itself). A joint's ``joint_rotation`` in a fit of this plan is Kimodo's
        ``R_j``.
    """
    rest = skeleton.rest_positions
    joints = []
    for j, name in enumerate(skeleton.joint_names):
        parent = None if j == 0 else skeleton.joint_names[skeleton.parents[j]]
        kind: dict[str, Any] = {"kind": "fixed"}
        if j > 0 and skeleton.children(j):
            kind = {"kind": "ball", "axis": _twist_axis(skeleton, j, rest)}
        joints.append(
            {
                "name": name,
                "parent": parent,
                "offset_pos": [float(v) for v in skeleton.offsets[j]],
                "offset_quat": [1.0, 0.0, 0.0, 0.0],
                **kind,
            }
        )
    data = {"version": 2, "fixed_base": False, "x-name": skeleton.name, "joints": joints}
    return load_body_plan(data, source=f"{skeleton.source}#{skeleton.name}")
