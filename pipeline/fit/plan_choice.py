"""The body plan of one session under the ``body_plan: auto`` setting (``-b auto``).

One decision for the CLI (``kinefit fit -b auto``, ``kinefit fit --config`` naming
``body_plan: auto``) and the archive flows (every session its own choice):

1. a BVH session (its tracks store records ``source_format: bvh`` and the file is where
   it was read, with the same content) carries its own skeleton: that plan is a candidate
   beside the shipped ones and wins any tie, so a BVH file is fitted with the skeleton
   it was recorded with (its joints are the file's keypoints);
2. otherwise the shipped plans are ranked by the track's keypoint names
   (:func:`pipeline.bodyplan.library.choice.choose_plan`); no good map is a
   :class:`~pipeline.errors.TracksError` naming the session file and the best candidates;
3. a session of one individual (3D, or one 2D view: its segment scales through the image
   plane) gets the chosen shipped plan calibrated to it
   (:func:`pipeline.calibrate.template_fit.fit_template`) unless ``calibrate`` is off
   (a file's own skeleton is the subject's already).

The decision is a function of the tracks, the library and a deterministic calibration,
so a rerun of an unchanged session makes the same choice, the same map and the same
calibrated plan: the fit's fingerprint (plan and map) is unchanged and the fit resumes
or is skipped. :meth:`PlanChoice.record` is kept in the fit store's
``body_plan_choice`` attr and in its fingerprint.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import xarray as xr

from pipeline.bodyplan.library.choice import PlanMatch, choose_plan, rank_plans
from pipeline.bodyplan.model import BodyPlan
from pipeline.provenance.hashing import tree_sha256

__all__ = ["AUTO", "PlanChoice", "choose_session_plan", "own_skeleton", "session_plan"]

#: The ``body_plan`` setting that chooses per session.
AUTO = "auto"


@dataclass(frozen=True)
class PlanChoice:
    """The plan ``body_plan: auto`` chose for one session, and its map.

    Attributes
    ----------
    name : str
        The shipped plan's name, or the BVH file's name (its own skeleton).
    plan : BodyPlan
        The plan to fit: the chosen one, calibrated to the subject when ``calibrated``.
    match : PlanMatch
        The ranking's entry (its proposal, coverage and unmatched keypoints).
    mapping : dict or None
        Track keypoint -> joint; None when the caller gave its own map.
    calibrated : bool
    note : str
        What the calibration did (or why it did not run); empty when it was not asked.
    own : bool
        The session file's own skeleton (a BVH file).
    """

    name: str
    plan: BodyPlan
    match: PlanMatch
    mapping: dict[str, str] | None
    calibrated: bool = False
    note: str = ""
    own: bool = False

    def record(self) -> dict[str, Any]:
        """Plain JSON of the choice (the fit store's ``body_plan_choice`` attr)."""
        return {
            "setting": AUTO,
            "plan": self.name,
            "own_skeleton": self.own,
            "mapped": self.match.n_mapped,
            "keypoints": self.match.n_keypoints,
            "map": "given" if self.mapping is None else "proposed",
            "calibrated": self.calibrated,
        }


def own_skeleton(ds: xr.Dataset) -> tuple[str, BodyPlan] | None:
    """A BVH session's own skeleton as ``(label, plan)``, else None.

    The source file must still be at the recorded path with the recorded content
    (``source_sha256``): a moved or changed file is not the session's skeleton. Tracks
    converted to another length unit at ingest (``converted_from_unit``) get the
    skeleton in their unit.
    """
    attrs = ds.attrs
    path = attrs.get("source_file")
    if attrs.get("source_format") != "bvh" or not path or not Path(path).is_file():
        return None
    digest = attrs.get("source_sha256")
    if digest and tree_sha256(path) != digest:
        return None
    from pipeline.bodyplan.io import body_plan_to_dict, load_body_plan
    from pipeline.tracks.units import unit_factor

    read_in = attrs.get("converted_from_unit")  # BVH records no unit: the reader was told
    plan = load_body_plan(path, unit=read_in) if read_in else load_body_plan(path)
    unit = attrs.get("unit")
    if read_in and unit and unit != read_in:  # the tracks were converted: so is the plan
        factor = unit_factor(read_in, unit, str(path))
        data = body_plan_to_dict(plan)
        for joint in data["joints"]:
            joint["offset_pos"] = [factor * float(c) for c in joint["offset_pos"]]
        plan = load_body_plan({**data, "unit": unit}, source=str(path))
    return Path(path).name, plan


def choose_session_plan(
    tracks: str | Path | xr.Dataset,
    *,
    source: str | None = None,
    keypoint_map: Mapping[str, str] | str | Path | None = None,
    calibrate: bool = True,
) -> PlanChoice:
    """Choose the body plan of one session (see the module docstring).

    Parameters
    ----------
    tracks : str, Path or xarray.Dataset
        The session's tracks store (or the opened dataset).
    source : str, optional
        Named in messages (default: the store's path or session).
    keypoint_map : mapping or YAML file, optional
        The user's own map: the plan is still chosen by names, the map is theirs
        (``mapping`` None) and nothing is calibrated.
    calibrate : bool
        Calibrate the chosen plan to a session of one individual (3D or one view).

    Returns
    -------
    PlanChoice

    Raises
    ------
    TracksError
        No candidate's map is good enough; names ``source`` and the best candidates with
        what each left unmatched.
    """
    from pipeline.store import open_tracks

    ds = tracks if isinstance(tracks, xr.Dataset) else open_tracks(tracks)
    source = source or (str(tracks) if not isinstance(tracks, xr.Dataset) else None)
    source = source or str(ds.attrs.get("session") or "<tracks>")
    names = [str(k) for k in ds["keypoint"].values]
    own = own_skeleton(ds)
    mine = None
    if own is not None:  # the file's own skeleton wins a tie
        ranked = rank_plans(names, dict([own]))
        mine = next(m for m in ranked if m.name == own[0])
        if not (mine.good_enough and mine.coverage >= ranked[0].coverage):
            mine = None
    match = mine or choose_plan(names, source, dict([own]) if own else None)
    is_own = mine is not None
    if keypoint_map is not None:
        return PlanChoice(match.name, match.plan, match, None, own=is_own)
    mapping = dict(match.proposal.mapping)
    if is_own or not calibrate or "view" in ds.dims:
        return PlanChoice(match.name, match.plan, match, mapping, own=is_own)
    from pipeline.calibrate.template_fit import fit_template

    session = ds.assign_attrs(session=ds.attrs.get("session") or Path(source).stem)
    fitted = fit_template(match.plan, session, mapping, source)
    plan = fitted.plan if fitted.calibrated else match.plan
    return PlanChoice(match.name, plan, match, mapping, fitted.calibrated, fitted.note, is_own)


def session_plan(
    plan: BodyPlan | str | Path,
    tracks: str | Path,
    keypoint_map: Mapping[str, str] | str | Path | None = None,
) -> tuple[BodyPlan, Mapping[str, str] | str | Path | None, dict[str, Any] | None]:
    """The plan, map and choice record one session is fitted with (the flows' reading).

    ``plan`` as given (a plan, a shipped plan's name or a file), or for :data:`AUTO` the
    session's own choice (:func:`choose_session_plan`, calibrating a 3D session).

    Returns
    -------
    plan : BodyPlan
    keypoint_map : mapping, str, Path or None
        ``keypoint_map``, or the chosen plan's proposed map when none was given.
    record : dict or None
        :meth:`PlanChoice.record` under ``auto``, else None.

    Raises
    ------
    TracksError
        ``auto`` and no shipped plan (nor a BVH file's own skeleton) matches the
        session's keypoint names well enough: names the tracks and the best candidates.
    """
    if isinstance(plan, BodyPlan):
        return plan, keypoint_map, None
    if str(plan) != AUTO:
        from pipeline.bodyplan.setting import resolve_body_plan

        return resolve_body_plan(plan), keypoint_map, None
    choice = choose_session_plan(tracks, source=str(tracks), keypoint_map=keypoint_map)
    mapping = keypoint_map if choice.mapping is None else choice.mapping
    return choice.plan, mapping, choice.record()
