"""Propose a track-keypoint -> body-plan-joint map by name, and write it as YAML.

Names are compared by a key that ignores what spellings vary in:

- case, separators (``_ - . space /``), camelCase and letter/digit boundaries
  (``LeftEar``, ``left_ear``, ``left-ear``, ``spine1`` / ``spine_1``), glued words
  (``tailbase`` = ``tail_base``), a namespace prefix (``mixamorig:Hips``);
- the side, spelt ``l``/``left``/``lft`` or ``r``/``right``/``rt``, anywhere in the name,
  glued to a known word too (``lhumerus``, ``LHip``, ``leftear``, ``hip_l``);
- filler words of robot and model files (``link``, ``joint``, ``jnt``, ``body``,
  ``bone``);
- common synonyms (``snout`` = ``nose``, ``tailend`` = ``tail_tip``, ``centre`` = ``center``,
  ``hips`` = ``pelvis``, ...; :data:`SYNONYMS`, extendable per call).

- an individual's prefix (``ind1_snout``, ``mouse2-nose``) and a prefix every keypoint
  shares (``ind1_``, a subject's ``Daphnee:``).

A joint is also known by its DOFs' names, so ``waist_pitch_joint`` (a DOF in an imported
MJCF's ``torso_link``) finds that body, and by the names its plan lists for it in
``x-keypoint-aliases`` (the shipped plans' conventions: ``TTI`` is the tail base).
A track keypoint is mapped only when exactly one joint has its key; the others are
listed as unmatched or ambiguous, never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import yaml

from pipeline.bodyplan.model import BodyPlan

__all__ = [
    "SYNONYMS",
    "KeypointMapProposal",
    "name_key",
    "plan_aliases",
    "propose_keypoint_map",
    "strip_prefixes",
]

#: Word -> canonical word. Applied to each word of a name (and to glued compounds).
SYNONYMS: dict[str, str] = {
    "snout": "nose",
    "muzzle": "nose",
    "centre": "center",
    "middle": "mid",
    "end": "tip",
    "tailend": "tailtip",
    "tailroot": "tailbase",
    "hips": "pelvis",
    "chest": "thorax",
    "torso": "thorax",
    "upperarm": "humerus",
    "forearm": "radius",
    "thigh": "femur",
    "shin": "tibia",
    "toes": "toe",
    "fingers": "finger",
}
_FILLER = {"link", "joint", "jnt", "body", "bone", "seg", "segment", "mixamorig"}
_LEFT = {"l", "left", "lft", "lt"}
_RIGHT = {"r", "right", "rgt", "rt"}
#: Words that start with l/r but are not sided (``rear`` is not "right ear").
_NOT_SIDED = {"rear", "rest", "root", "ring", "radius", "rump", "leg", "lid", "lip"}


#: An individual's or track's prefix on a keypoint name (``ind1_``, ``animal0-``).
_INDIVIDUAL = re.compile(r"^(?:ind|individual|animal|mouse|fly|subject|track|id)\d+[_\-.:]", re.I)


def strip_prefixes(keypoints: Sequence[str]) -> dict[str, str]:
    """Each keypoint name without an individual's prefix or a prefix all of them share.

    Parameters
    ----------
    keypoints : sequence of str

    Returns
    -------
    dict
        Keypoint -> its name for matching (``ind1_snout`` -> ``snout``); a shared prefix
        is cut only at a separator (``_ - . :``), only when it holds a digit or ends in
        ``:`` (``paw_l``, ``paw_r`` keep their word), and never leaves a name empty.
    """
    names = {k: _INDIVIDUAL.sub("", k) for k in keypoints}
    if len(names) > 1:
        common = _os_commonprefix(list(names.values()))
        cut = max(common.rfind(c) for c in "_-.:") + 1
        prefix = common[:cut]
        looks_like_id = prefix.endswith(":") or any(c.isdigit() for c in prefix)
        if cut > 0 and looks_like_id and all(len(v) > cut + 1 for v in names.values()):
            names = {k: v[cut:] for k, v in names.items()}
    return names


def _os_commonprefix(values: list[str]) -> str:
    lo, hi = min(values), max(values)
    n = 0
    while n < min(len(lo), len(hi)) and lo[n] == hi[n]:
        n += 1
    return lo[:n]


def plan_aliases(plan: BodyPlan) -> dict[str, list[str]]:
    """The plan's ``x-keypoint-aliases``: joint -> other names of its keypoint."""
    raw = (plan.extras or {}).get("x-keypoint-aliases") or {}
    joints = set(plan.joint_names)
    return {str(j): [str(a) for a in names] for j, names in raw.items() if j in joints}


def _words(name: str) -> list[str]:
    name = name.rsplit(":", 1)[-1]
    name = re.sub(r"([a-z])([A-Z])", r"\1 \2", name)
    name = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", name)
    name = re.sub(r"([A-Za-z])(\d)", r"\1 \2", name)
    name = re.sub(r"(\d)([A-Za-z])", r"\1 \2", name)
    return [w for w in re.split(r"[^A-Za-z0-9]+", name.lower()) if w]


def name_key(name: str, vocabulary: Iterable[str] = (), synonyms: Mapping[str, str] | None = None):
    """The comparison key of a name: ``(side, glued canonical words)``.

    Parameters
    ----------
    name : str
    vocabulary : iterable of str
        Known words: a word made of a side letter glued to one of them (``lhip``) is
        split; ``left``/``right`` glued in front of any word are always split.
    synonyms : mapping, optional
        Word -> canonical word (default :data:`SYNONYMS`).

    Returns
    -------
    tuple of (str, str)
        ``side`` is ``"L"``, ``"R"`` or ``""``.
    """
    synonyms = SYNONYMS if synonyms is None else synonyms
    known = set(vocabulary) | set(synonyms) | set(synonyms.values())
    side = ""
    rest: list[str] = []
    for word in _words(name):
        if word in _FILLER:
            continue
        if word in _LEFT or word in _RIGHT:
            side = side or ("L" if word in _LEFT else "R")
            continue
        for prefix, which in (("left", "L"), ("right", "R")):
            if word.startswith(prefix) and len(word) > len(prefix):
                side, word = side or which, word[len(prefix) :]
                break
        else:
            if word[0] in "lr" and word[1:] in known and word not in _NOT_SIDED:
                side, word = side or word[0].upper(), word[1:]
        rest.append(synonyms.get(word, word))
    glued = "".join(rest)
    return side, synonyms.get(glued, glued)


@dataclass(frozen=True)
class KeypointMapProposal:
    """A proposed keypoint map and what it left out.

    Attributes
    ----------
    mapping : dict
        Track keypoint -> joint, only the unambiguous matches (names equal to the joint
        included, so the map is complete for the fit).
    unmatched : list of str
        Track keypoints no joint's name matches.
    ambiguous : dict
        Track keypoint -> the several joints it matches (or that another keypoint claims
        too); left out of ``mapping``.
    unused_joints : list of str
        Joints no track keypoint maps to.
    """

    mapping: dict[str, str]
    unmatched: list[str] = field(default_factory=list)
    ambiguous: dict[str, list[str]] = field(default_factory=dict)
    unused_joints: list[str] = field(default_factory=list)

    def to_yaml(self) -> str:
        """The map as the YAML the fit takes (``keypoints:``), gaps as comments."""
        body = yaml.safe_dump({"keypoints": self.mapping}, sort_keys=False, allow_unicode=True)
        notes = (
            [f"# unmatched track keypoints: {', '.join(self.unmatched)}"] if self.unmatched else []
        )
        for k, joints in self.ambiguous.items():
            notes.append(f"# ambiguous: {k} -> one of {', '.join(joints)}")
        return "\n".join(notes + [body.rstrip("\n")]) + "\n"


def propose_keypoint_map(
    keypoints: Sequence[str],
    plan: BodyPlan | Sequence[str],
    *,
    synonyms: Mapping[str, str] | None = None,
    aliases: Mapping[str, Sequence[str]] | None = None,
) -> KeypointMapProposal:
    """Match track keypoint names to a plan's joints by name.

    Parameters
    ----------
    keypoints : sequence of str
        Track keypoint names (e.g. a DeepLabCut file's bodyparts).
    plan : BodyPlan or sequence of str
        The plan (joint names, and its DOF names as aliases) or joint names.
    synonyms : mapping, optional
        Extra word -> canonical word pairs, added to :data:`SYNONYMS`.
    aliases : mapping, optional
        Joint -> further names of its keypoint, added to the plan's own
        (:func:`plan_aliases`).

    Returns
    -------
    KeypointMapProposal
    """
    words = dict(SYNONYMS)
    words.update(synonyms or {})
    names_of: dict[str, set[str]] = {}
    if isinstance(plan, BodyPlan):
        for joint in plan.joints:
            names = {joint.name}
            names.update(
                d.name.rsplit("/", 1)[0] if "/" in d.name else d.name for d in joint.dofs if d.name
            )
            names_of[joint.name] = names
        for joint_name, more in plan_aliases(plan).items():
            names_of[joint_name].update(more)
    else:
        names_of = {str(j): {str(j)} for j in plan}
    for joint_name, more in (aliases or {}).items():
        if joint_name in names_of:
            names_of[joint_name].update(str(a) for a in more)
    bare = strip_prefixes([str(k) for k in keypoints])
    vocabulary = {w for names in names_of.values() for n in names for w in _words(n)}
    vocabulary |= {w for k in bare.values() for w in _words(k)}
    by_key: dict[tuple[str, str], set[str]] = {}
    for joint, names in names_of.items():
        for n in names:
            by_key.setdefault(name_key(n, vocabulary, words), set()).add(joint)
    claims: dict[str, list[str]] = {}
    unmatched, ambiguous = [], {}
    for k in keypoints:
        if k in names_of:
            claims.setdefault(k, []).append(k)
            continue
        key = name_key(bare[k], vocabulary, words)
        found = sorted(by_key.get(key, set()))
        if not found and not key[0]:  # no side given: either side's joint would do
            found = sorted(by_key.get(("L", key[1]), set()) | by_key.get(("R", key[1]), set()))
            if len(found) == 1:
                found = []
        if not found:
            unmatched.append(k)
        elif len(found) > 1:
            ambiguous[k] = found
        else:
            claims.setdefault(found[0], []).append(k)
    mapping = {}
    for joint, ks in claims.items():
        if len(ks) == 1:
            mapping[ks[0]] = joint
        else:
            for k in ks:
                ambiguous[k] = [joint]
    mapping = {k: mapping[k] for k in keypoints if k in mapping}
    used = set(mapping.values())
    return KeypointMapProposal(
        mapping=mapping,
        unmatched=unmatched,
        ambiguous=ambiguous,
        unused_joints=[j for j in names_of if j not in used],
    )
