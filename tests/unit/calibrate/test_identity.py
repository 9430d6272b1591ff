"""Identities across sessions: one stored calibration, reused, recomputed, disagreements flagged."""

from __future__ import annotations

import dataclasses

import pytest

from pipeline.calibrate import CalibrationConfig, load_calibration
from pipeline.calibrate.identity import calibrate_identity, calibration_path, group_identities
from pipeline.errors import DiscoveryError
from pipeline.fit import fit_session
from pipeline.solve import SolverConfig
from pipeline.store import write_tracks
from tests.unit.calibrate.subjects import make_subject, mannequin_template, render

CONFIG = CalibrationConfig(n_frames=300)


@pytest.mark.slow
def test_one_identity_over_sessions_stored_once_reused_and_refitted(tmp_path, rng):
    template = mannequin_template()
    subject, _, params = make_subject(template, rng)
    stores = {}
    for k in range(4):
        session = render(subject, rng, n_frames=200, session=f"day{k}")
        stores[f"day{k}"] = str(write_tracks(session.tracks, tmp_path / f"day{k}.zarr"))
    bigger = dataclasses.replace(  # the subject 15 % larger all over
        subject,
        joints=tuple(
            dataclasses.replace(j, offset_pos=tuple(1.15 * v for v in j.offset_pos))
            for j in subject.joints
        ),
    )
    stores["stranger"] = str(
        write_tracks(render(bigger, rng, n_frames=200).tracks, tmp_path / "s.zarr")
    )
    sessions = {n: (p, ["individual_0"]) for n, p in stores.items()}
    manifest = {n: {"individual_0": "mouse1"} for n in stores}
    groups = group_identities({n: sessions[n] for n in ("day0", "day1", "day2")}, manifest)
    assert list(groups) == ["mouse1"] and len(groups["mouse1"]) == 3
    first = calibrate_identity("mouse1", groups["mouse1"], template, tmp_path, CONFIG)
    assert not first.reused and first.path == calibration_path(tmp_path, "mouse1")
    assert sorted(p.name for p in (tmp_path / "calibrations").iterdir()) == ["mouse1.json"]
    assert first.flagged == ()
    stored = load_calibration(first.path)
    assert [s["name"] for s in stored.record["sessions"]] == ["day0", "day1", "day2"]

    # a fourth session reuses it, without recalibrating (same offsets, same frames)
    four = group_identities({n: sessions[n] for n in ("day0", "day1", "day2", "day3")}, manifest)
    again = calibrate_identity("mouse1", four["mouse1"], template, tmp_path, CONFIG)
    assert again.reused and set(again.session_scales) == {"day0", "day1", "day2", "day3"}
    reread = load_calibration(first.path)
    assert reread.plan == stored.plan and reread.record["sessions"] == stored.record["sessions"]
    solver = SolverConfig()
    days = [m.session for m in four["mouse1"]]
    fits = {
        n: fit_session(stores[n], reread.plan, solver, tmp_path / f"fit_{n}.zarr") for n in days
    }
    other = fit_session(stores["stranger"], template, solver, tmp_path / "fit_stranger.zarr")
    assert not any(r.skipped for r in fits.values()) and not other.skipped

    # a template edit: recalibrate, then exactly the sessions fitted with it are refitted
    edited = dataclasses.replace(
        template, calibration={**template.calibration, "prior": {"segment_scale": 2.0}}
    )
    redo = calibrate_identity("mouse1", four["mouse1"], edited, tmp_path, CONFIG)
    assert not redo.reused
    new_plan = load_calibration(redo.path).plan
    refit = {n: fit_session(stores[n], new_plan, solver, tmp_path / f"fit_{n}.zarr") for n in fits}
    assert not any(r.skipped for r in refit.values())
    assert fit_session(stores["stranger"], template, solver, tmp_path / "fit_stranger.zarr").skipped
    forced = calibrate_identity(
        "mouse1", four["mouse1"], edited, tmp_path, CONFIG, recalibrate=True
    )
    assert not forced.reused

    # a different-sized subject labelled with the same identity is flagged
    mixed = group_identities({n: sessions[n] for n in ("day0", "day1", "stranger")}, manifest)
    flagged = calibrate_identity("mouse1", mixed["mouse1"], edited, tmp_path / "b", CONFIG)
    assert flagged.flagged == ("stranger",), flagged.session_scales
    assert load_calibration(flagged.path).record["flagged"] == ["stranger"]


def test_two_tracks_of_one_session_cannot_be_one_identity():
    sessions = {"day0": ("x.zarr", ["a", "b"])}
    with pytest.raises(DiscoveryError, match=r"individuals 'a' and 'b' are both identity 'm1'"):
        group_identities(sessions, {"day0": {"a": "m1", "b": "m1"}})


def test_per_session_identities_and_unsafe_names(tmp_path):
    groups = group_identities({"s1": ("x", ["a", "b"]), "s2": ("y", ["a"])}, per_session=True)
    assert sorted(groups) == ["s1/a", "s1/b", "s2"]
    assert group_identities({"s1": ("x", ["a"]), "s2": ("y", ["a"])}).keys() == {"a"}
    with pytest.raises(DiscoveryError, match=r"unsafe session name '\.\./x'"):
        calibration_path(tmp_path, "../x")
