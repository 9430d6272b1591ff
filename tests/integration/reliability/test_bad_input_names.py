"""Hostile names: a session can never place output outside the output root.

Session names come from manifests (checked, refused when unsafe) or from file names
(sanitized); :func:`pipeline.archive.discover.session_store` is the one place a name becomes a
path and refuses anything outside the root, symlinks included. Keypoint and individual
names are data, never paths. Output names too long for the filesystem are refused before
anything is written.
"""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.archive.discover import DiscoveryError, discover_sessions, session_store
from pipeline.config import ArchiveConfig
from pipeline.fit import FitError, fit_session
from pipeline.store import write_tracks
from pipeline.store.fit import open_fit
from tests.fixtures.reliability_helpers import assert_unchanged, snapshot

HOSTILE = [
    "../../x",
    "../x",
    "a/../../b",
    "/etc/x",
    "//x",
    "a//b",
    "./x",
    ".hidden",
    "a/.",
    "x\\..\\y",
    "",
    "a/b/",
    "con\x00sole",
    "~root/x",
]


@pytest.mark.parametrize("name", HOSTILE)
def test_unsafe_session_name_never_becomes_a_path(tmp_path, name):
    before = snapshot(tmp_path)
    with pytest.raises(DiscoveryError, match="session"):
        session_store(tmp_path / "fits", name)
    assert_unchanged(before, tmp_path)


@pytest.mark.parametrize("name", HOSTILE[:6])
def test_unsafe_manifest_name_names_the_entry(tmp_path, name):
    (tmp_path / "archive").mkdir()
    (tmp_path / "archive" / "s.csv").write_text("frame,keypoint,x,y\n0,a,0,0\n")
    manifest = tmp_path / "archive" / "manifest.yaml"
    manifest.write_text(f"sessions:\n  - name: {name!r}\n    file: s.csv\n")
    archive = ArchiveConfig(path=str(tmp_path / "archive"), manifest="manifest.yaml")
    with pytest.raises(DiscoveryError, match=r"manifest\.yaml: sessions\[0\]: unsafe session"):
        discover_sessions(archive)


def test_manifest_file_outside_the_archive_is_refused(tmp_path):
    (tmp_path / "archive").mkdir()
    manifest = tmp_path / "archive" / "manifest.yaml"
    manifest.write_text("sessions:\n  - name: s\n    file: ../secret.csv\n")
    archive = ArchiveConfig(path=str(tmp_path / "archive"), manifest="manifest.yaml")
    with pytest.raises(DiscoveryError, match=r"sessions\[0\]: file '../secret.csv' must stay"):
        discover_sessions(archive)


def test_file_names_become_safe_session_names(tmp_path):
    archive = tmp_path / "archive"
    (archive / "sub dir").mkdir(parents=True)
    for name in [
        "..dots.csv",
        "a b;rm -rf ~.csv",
        "séance.csv",
        "sub dir/-x.csv",
        "q" * 200 + ".csv",
    ]:
        (archive / name).write_text("frame,keypoint,x,y\n0,a,0,0\n")
    config = ArchiveConfig(path=str(archive), patterns=["**/*.csv"], naming="relative")
    names = [s.name for s in discover_sessions(config)]
    root = (tmp_path / "fits").resolve()
    for name in names:
        assert session_store(root, name).is_relative_to(root), name
    assert "a_b_rm_-rf_" in names and "sub_dir/-x" in names


def test_symlink_out_of_the_root_is_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "fits").mkdir()
    (tmp_path / "fits" / "lab").symlink_to(outside)
    with pytest.raises(DiscoveryError, match="would be written outside"):
        session_store(tmp_path / "fits", "lab/s1")


def test_session_name_too_long_for_the_filesystem(tmp_path):
    before = snapshot(tmp_path)
    with pytest.raises(DiscoveryError, match=r"is too long \(300 bytes; at most 200"):
        session_store(tmp_path, "s" * 300)
    assert_unchanged(before, tmp_path)


def test_output_name_too_long_is_refused_before_writing(fly, small_session, solver, tmp_path):
    tracks, _ = small_session
    out = tmp_path / ("f" * 247 + ".zarr")  # fits NAME_MAX; its .partial twin would not
    before = snapshot(tmp_path)
    with pytest.raises(
        FitError,
        match=r"output name is too long \(252 bytes\).*partial.*use a name of at most 241",
    ):
        fit_session(tracks, fly, solver, out)
    assert_unchanged(before, tmp_path)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"chunk_frames": 0}, "chunk_frames must be >= 1"),
        ({"chunk_frames": -20}, "chunk_frames must be >= 1"),
        ({"overlap_frames": -1}, "overlap_frames >= 0"),
    ],
    ids=["chunk-frames-zero", "chunk-frames-negative", "overlap-negative"],
)
def test_bad_chunking_is_refused(fly, small_session, solver, tmp_path, kwargs, match):
    tracks, _ = small_session
    before = snapshot(tmp_path)
    with pytest.raises(ValueError, match=match):
        fit_session(tracks, fly, solver, tmp_path / "fit.zarr", **kwargs)
    assert_unchanged(before, tmp_path)


def test_hostile_keypoint_and_individual_names_stay_data(fly, fly_tracks, solver, tmp_path):
    """Names like ``../../x`` and 10 000 characters are coordinates, never paths."""
    root = tmp_path / "root"
    root.mkdir()
    keypoints = [str(k) for k in fly_tracks["keypoint"].values]
    extra = fly_tracks.isel(keypoint=[0, 1]).assign_coords(
        keypoint=np.array(["../../x", "k" * 10_000], dtype=object)
    )
    import xarray as xr

    tracks = xr.concat([fly_tracks, extra], dim="keypoint").assign_coords(
        individual=np.array(["/etc/../../y"], dtype=object)
    )
    path = write_tracks(tracks, root / "t.zarr", chunk_frames=20)
    before = snapshot(tmp_path)
    with pytest.warns(UserWarning, match=r"without a joint"):
        report = fit_session(path, fly, solver, root / "fit.zarr")
    fit = open_fit(report.out)
    assert list(fit["individual"].values) == ["/etc/../../y"]
    assert report.unmapped_keypoints == ("../../x", "k" * 10_000)
    assert [str(k) for k in fit["keypoint"].values] == list(fly.joint_names)
    created = sorted(set(snapshot(tmp_path)) - set(before))
    assert all(c.startswith("root/fit.zarr") for c in created), created[:5]
    assert keypoints  # the tracks' own keypoints were fitted
