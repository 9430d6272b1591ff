"""One calibration per identity across an archive, stored once and reused.

An identity is an individual that spans sessions: by default a track's individual name,
or what the manifest says (``sessions: [{name, file, individuals: {track_name:
identity}}]``). Per identity, frames are sampled from all of its sessions and the
calibrated plan is stored once as ``<outputs.root>/calibrations/<identity>.json``
(atomically), fingerprinted by the template, the settings and the identity
(:func:`pipeline.calibrate.subject.calibration_fingerprint`). A new session of a known
identity reuses the stored calibration; a changed template or setting, or
``recalibrate``, computes it again, and since a fit's fingerprint includes its plan, exactly
the sessions fitted with it are refitted.

Every session also gets its own global-scale estimate against the calibrated body (a
scale-only calibration on a few hundred of its frames); a session whose scale differs from
the median of its identity's sessions by more than ``tolerance`` is flagged (growth, a
mislabeled animal).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pipeline.archive.discover import check_session_name
from pipeline.bodyplan.model import BodyPlan
from pipeline.calibrate.calibration_record import Calibration, load_calibration
from pipeline.calibrate.frame_selection import choose_frames
from pipeline.calibrate.params import CalibrationSpec, resolve
from pipeline.calibrate.solve import solve_shape
from pipeline.calibrate.subject import (
    CalibrationConfig,
    SessionTargets,
    calibrate,
    calibration_fingerprint,
    session_targets,
)
from pipeline.errors import CalibrationError, DiscoveryError
from pipeline.store.tracks import open_tracks
from pipeline.synth.sessions import body_size

__all__ = [
    "IdentityCalibration",
    "archive_identities",
    "session_plans",
    "Member",
    "calibrate_identity",
    "calibration_path",
    "group_identities",
    "session_scale",
]

#: Frames of a session used for its scale check.
SCALE_FRAMES = 200


@dataclass(frozen=True)
class Member:
    """One individual of one session that belongs to an identity.

    Attributes
    ----------
    session : str
    tracks : str
        The session's tracks store.
    individual : str
        The individual's name in the tracks.
    """

    session: str
    tracks: str
    individual: str


@dataclass(frozen=True)
class IdentityCalibration:
    """What the calibration stage did for one identity.

    Attributes
    ----------
    identity : str
    path : Path
        The stored calibration.
    reused : bool
        The stored calibration was current and was used as it is.
    session_scales : dict
        Session -> its global scale relative to the calibrated body.
    flagged : tuple of str
        Sessions whose scale is off the median session's by more than the tolerance.
    """

    identity: str
    path: Path
    reused: bool
    session_scales: Mapping[str, float]
    flagged: tuple[str, ...]


def calibration_path(root: str | Path, identity: str) -> Path:
    """``<root>/calibrations/<identity>.json``, guaranteed inside ``root``.

    Raises
    ------
    DiscoveryError
        An identity that is not a safe name (the session-name rules).
    """
    check_session_name(identity, f"identity {identity!r}")
    base = (Path(root) / "calibrations").resolve()
    path = (base / f"{identity}.json").resolve()
    if not path.is_relative_to(base):
        raise DiscoveryError(f"identity {identity!r} would be written outside {base}")
    return path


def group_identities(
    sessions: Mapping[str, tuple[str, Sequence[str]]],
    individuals: Mapping[str, Mapping[str, str]] | None = None,
    *,
    per_session: bool = False,
) -> dict[str, list[Member]]:
    """Members of every identity.

    Parameters
    ----------
    sessions : mapping
        Session -> (tracks store, the store's individual names).
    individuals : mapping, optional
        Session -> {track individual: identity} (the manifest's ``individuals``); others
        are their own name.
    per_session : bool
        Every session's individuals are identities of their own (``<session>`` or
        ``<session>/<individual>`` when it has several).

    Raises
    ------
    DiscoveryError
        Two individuals of one session given the same identity.
    """
    out: dict[str, list[Member]] = {}
    for name, (tracks, names) in sorted(sessions.items()):
        given = dict((individuals or {}).get(name) or {})
        seen: dict[str, str] = {}
        for ind in names:
            if per_session:
                identity = name if len(names) == 1 else f"{name}/{ind}"
            else:
                identity = given.get(ind, ind)
            if identity in seen:
                raise DiscoveryError(
                    f"session {name!r}: individuals {seen[identity]!r} and {ind!r} are both "
                    f"identity {identity!r}; one animal cannot be two tracks of one session"
                )
            seen[identity] = ind
            out.setdefault(identity, []).append(Member(name, tracks, ind))
    return out


def session_scale(
    calibrated: BodyPlan, session: SessionTargets, config: CalibrationConfig
) -> float:
    """A session's overall scale against a calibrated body (1 = the same size)."""
    choice = choose_frames(
        [session.targets],
        SCALE_FRAMES,
        min_frames=min(config.min_frames, SCALE_FRAMES),
        min_observed=config.min_observed,
        names=[session.name],
    )
    frames = choice.frames[0]
    spec = CalibrationSpec(global_scale=True, segments=False)
    plain = dataclasses.replace(calibrated, calibration=None)
    params = resolve(plain, spec, size=body_size(plain))
    sol = solve_shape(
        params, session.targets[frames], session.weights[frames], config.solver, max_iterations=10
    )
    return float(sol.theta[0])


def calibrate_identity(
    identity: str,
    members: Sequence[Member],
    template: BodyPlan,
    root: str | Path,
    config: CalibrationConfig | None = None,
    *,
    recalibrate: bool = False,
    tolerance: float = 0.03,
    keypoint_map: Mapping[str, str] | str | Path | None = None,
) -> IdentityCalibration:
    """Calibrate (or reuse) one identity's body and check each session's scale.

    Raises
    ------
    CalibrationError
        The calibration cannot be computed; nothing is written then.
    """
    config = config or CalibrationConfig()
    path = calibration_path(root, identity)
    fingerprint = calibration_fingerprint(template, config, identity)
    stored: Calibration | None = None
    if path.exists() and not recalibrate:
        try:
            stored = load_calibration(path)
        except Exception:  # noqa: BLE001 - an unreadable stored file is recomputed
            stored = None
        if stored is not None and stored.fingerprint != fingerprint:
            stored = None
    targets = {
        m.session: session_targets(template, m.tracks, m.individual, keypoint_map, m.session)
        for m in members
    }
    reused = stored is not None
    if stored is None:
        stored = calibrate(template, list(targets.values()), config, identity=identity)
    scales = dict(stored.record.get("session_scales") or {}) if reused else {}
    for name, session in targets.items():
        if name not in scales:
            scales[name] = session_scale(stored.plan, session, config)
    centre = float(np.median(list(scales.values())))
    flagged = tuple(sorted(n for n, s in scales.items() if abs(s / centre - 1.0) > tolerance))
    if not reused or scales != stored.record.get("session_scales"):
        stored = stored.with_record(session_scales=scales, flagged=list(flagged))
        stored.save(path)  # the offsets are unchanged on reuse: no fit goes stale
    if not path.exists():
        raise CalibrationError(f"{path}: the calibration was not written")
    return IdentityCalibration(identity, path, reused, scales, flagged)


def archive_identities(
    tracks: Mapping[str, str],
    individuals: Mapping[str, Mapping[str, str]] | None = None,
    *,
    per_session: bool = False,
) -> dict[str, list[Member]]:
    """:func:`group_identities` over an archive's tracks stores (session -> store)."""
    sessions = {
        name: (store, [str(i) for i in open_tracks(store)["individual"].values])
        for name, store in tracks.items()
    }
    return group_identities(sessions, individuals, per_session=per_session)


def session_plans(
    groups: Mapping[str, Sequence[Member]], paths: Mapping[str, str | Path]
) -> tuple[dict[str, str], tuple[str, ...]]:
    """Which calibrated plan fits each session.

    Parameters
    ----------
    groups : mapping
        Identity -> its members (:func:`group_identities`).
    paths : mapping
        Identity -> its stored calibration (identities that failed are absent).

    Returns
    -------
    plans : dict
        Session -> calibrated plan file, for sessions whose individuals all belong to one
        calibrated identity.
    mixed : tuple of str
        Sessions whose individuals are several identities: one fit has one body, so they
        are fitted with the template.
    """
    owners: dict[str, set[str]] = {}
    for identity, members in groups.items():
        for m in members:
            owners.setdefault(m.session, set()).add(identity)
    plans = {
        s: str(paths[next(iter(ids))])
        for s, ids in owners.items()
        if len(ids) == 1 and next(iter(ids)) in paths
    }
    return plans, tuple(sorted(s for s, ids in owners.items() if len(ids) > 1))
