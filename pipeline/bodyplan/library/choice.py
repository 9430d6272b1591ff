"""Choose a body plan and its keypoint map from a track's keypoint names (``-b auto``).

Every candidate (the shipped plans, then any given ones) gets the map
:func:`~pipeline.bodyplan.keypoint_map.propose_keypoint_map` proposes; candidates rank by
the fraction of the track's keypoints their map covers, then by how many it maps, then
in the order given (the shipped table's order breaks ties: ``human_pose`` before
``macaque`` for COCO names, ``mouse_topdown`` before ``rodent_side``). A map is good
enough (:func:`check_map`) when it maps at least ``MIN_MAPPED`` keypoints (``MIN_FEW``
of a track with fewer: a body's pose needs three points) and covers at least
``MIN_COVERAGE`` of them, or maps ``MANY_MAPPED`` or more (a marker set
beside a system's own model outputs); otherwise the choice is refused, naming the best
candidates and what they left unmatched.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pipeline.bodyplan.keypoint_map import KeypointMapProposal, propose_keypoint_map
from pipeline.bodyplan.library import SHIPPED, shipped_plan
from pipeline.bodyplan.model import BodyPlan
from pipeline.errors import TracksError

__all__ = [
    "MANY_MAPPED",
    "MIN_COVERAGE",
    "MIN_FEW",
    "MIN_MAPPED",
    "PlanMatch",
    "check_map",
    "choose_plan",
    "rank_plans",
]

#: A map needs this many keypoints (MIN_FEW of a track that has fewer) ...
MIN_MAPPED = 4
MIN_FEW = 3
#: ... and this fraction of the track's keypoints, unless it maps MANY_MAPPED or more.
MIN_COVERAGE = 0.5
MANY_MAPPED = 20


@dataclass(frozen=True)
class PlanMatch:
    """One candidate plan with the map proposed for a track's keypoints.

    Attributes
    ----------
    name : str
        The shipped plan's name, or the given plan's label (its file).
    plan : BodyPlan
    proposal : KeypointMapProposal
    n_keypoints : int
        The track's keypoints.
    """

    name: str
    plan: BodyPlan
    proposal: KeypointMapProposal
    n_keypoints: int

    @property
    def n_mapped(self) -> int:
        """Track keypoints the map assigns to a joint."""
        return len(self.proposal.mapping)

    @property
    def coverage(self) -> float:
        """Fraction of the track's keypoints mapped (0 for a track without keypoints)."""
        return self.n_mapped / self.n_keypoints if self.n_keypoints else 0.0

    @property
    def good_enough(self) -> bool:
        """The map passes :func:`check_map`'s thresholds."""
        return self.n_mapped >= _need(self.n_keypoints) and (
            self.coverage >= MIN_COVERAGE or self.n_mapped >= MANY_MAPPED
        )

    def describe(self) -> str:
        """``name (mapped/total keypoints, unmatched: ...)`` for messages."""
        left = self.proposal.unmatched + list(self.proposal.ambiguous)
        shown = ", ".join(left[:8]) + (f" and {len(left) - 8} more" if len(left) > 8 else "")
        return (
            f"{self.name} ({self.n_mapped}/{self.n_keypoints} keypoints"
            + (f"; unmatched: {shown}" if left else "")
            + ")"
        )


def _need(n_keypoints: int) -> int:
    """Keypoints a map must have for a track of ``n_keypoints``."""
    return MIN_MAPPED if n_keypoints >= MIN_MAPPED else MIN_FEW


def rank_plans(
    keypoints: Sequence[str], given: Mapping[str, BodyPlan] | None = None
) -> list[PlanMatch]:
    """Every shipped plan, then every given one, ranked for ``keypoints``, best first.

    Parameters
    ----------
    keypoints : sequence of str
        The track's keypoint names.
    given : mapping, optional
        Label -> plan: further candidates (their ``x-keypoint-aliases`` count too).

    Returns
    -------
    list of PlanMatch
    """
    names = [str(k) for k in keypoints]
    candidates = [(n, shipped_plan(n)) for n in SHIPPED] + list((given or {}).items())
    matches = [
        PlanMatch(label, plan, propose_keypoint_map(names, plan), len(names))
        for label, plan in candidates
    ]
    order = {id(m): i for i, m in enumerate(matches)}
    return sorted(matches, key=lambda m: (-m.coverage, -m.n_mapped, order[id(m)]))


def check_map(match: PlanMatch, source: str) -> PlanMatch:
    """``match`` when its map is good enough, else a :class:`TracksError` naming the gaps.

    Raises
    ------
    TracksError
        The map is empty or weak: names the plan, the keypoints it did not match and
        the thresholds.
    """
    if match.good_enough:
        return match
    raise TracksError(
        f"{source}: the keypoint map onto {match.describe()} is too weak to fit: a map "
        f"needs at least {_need(match.n_keypoints)} keypoints and "
        f"{MIN_COVERAGE:.0%} of the track's (or {MANY_MAPPED}); write a map "
        "(--keypoint-map, see: kinefit body-plan map) or choose another plan"
    )


def choose_plan(
    keypoints: Sequence[str],
    source: str,
    given: Mapping[str, BodyPlan] | None = None,
    *,
    shown: int = 3,
) -> PlanMatch:
    """The best candidate for ``keypoints`` (:func:`rank_plans`), if its map is good enough.

    Raises
    ------
    TracksError
        No candidate's map is good enough: lists the ``shown`` best with what each left
        unmatched.
    """
    ranked = rank_plans(keypoints, given)
    if ranked and ranked[0].good_enough:
        return ranked[0]
    best = "; ".join(m.describe() for m in ranked[:shown])
    raise TracksError(
        f"{source}: no body plan matches the track's keypoint names well enough (a map "
        f"needs at least {_need(len(keypoints))} keypoints and {MIN_COVERAGE:.0%} "
        f"of the track's, or {MANY_MAPPED}); best candidates: {best}. Name the plan "
        "(--body-plan, or body_plan in the run config) with a keypoint map (--keypoint-map "
        "or keypoint_map; see: kinefit body-plan map TRACKS PLAN)"
    )
