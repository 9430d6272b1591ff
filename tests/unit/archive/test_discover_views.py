"""Multi-camera sessions found by file name (``archive.camera_regex``, Anipose's cam_regex).

A tmp archive holds two synthetic 3-camera trials written like a lab's files
(``trial1_camA.csv`` ... beside an Anipose ``calibration.toml``); discovery groups them into
the sessions a manifest would declare, one is ingested end to end, and every bad input is
one clear error that names the files and the setting and leaves the archive as it was.
"""

from __future__ import annotations

import shutil
from dataclasses import replace

import numpy as np
import pytest

from pipeline.archive.discover import DiscoveryError, discover_sessions, read_manifest
from pipeline.archive.ingest import ingest_session
from pipeline.bodyplan import load_body_plan
from pipeline.cameras import write_calibration
from pipeline.config import ArchiveConfig
from pipeline.store import open_tracks
from tests.fixtures.multiview_rig import fly_rig, write_rig_session

REGEX = "_(cam[A-Z])$"
CAMERAS = ["camA", "camB", "camC"]


@pytest.fixture(scope="module")
def rigs(fly_plan_path, tmp_path_factory):
    """Two 3-camera trials (20 frames) in one folder with their calibration.toml."""
    plan = load_body_plan(fly_plan_path)
    folder = tmp_path_factory.mktemp("rig")
    return {
        trial: write_rig_session(folder, plan, fly_rig(3), n_frames=20, seed=seed, session=trial)
        for seed, trial in enumerate(["trial1", "trial2"])
    }


@pytest.fixture
def archive(rigs, tmp_path):
    """A fresh copy of the rig's folder: ``trial{1,2}_cam{A,B,C}.csv`` + calibration.toml."""
    root = tmp_path / "archive"
    shutil.copytree(next(iter(rigs.values())).calibration.parent, root)
    return root


def _config(root, **changes):
    settings = {
        "path": str(root),
        "patterns": ["**/*.csv"],
        "camera_regex": REGEX,
        "calibration": "calibration.toml",
        "fps": 100.0,
        "options": {"unit": "mm"},
    }
    return ArchiveConfig(**{**settings, **changes})


def _listing(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_files_sharing_a_session_name_become_one_multi_view_session(archive):
    one, two = discover_sessions(_config(archive))
    assert [one.name, two.name] == ["trial1", "trial2"]
    for source in (one, two):
        assert source.views == {c: str(archive / f"{source.name}_{c}.csv") for c in CAMERAS}
        assert list(source.views) == CAMERAS  # the calibration's order
        assert source.calibration == source.url == str(archive / "calibration.toml")
        assert (source.fps, dict(source.options), source.format) == (100.0, {"unit": "mm"}, None)


def test_a_discovered_session_is_the_one_its_manifest_entry_makes(archive):
    (archive / "sessions.yaml").write_text(
        "sessions:\n  - name: trial2\n    views: {"
        + ", ".join(f"{c}: trial2_{c}.csv" for c in CAMERAS)
        + "}\n    calibration: calibration.toml\n"
    )
    config = _config(archive)
    (manifest,) = read_manifest("sessions.yaml", config)
    assert discover_sessions(config)[1] == manifest
    # a manifest still wins over the patterns
    assert discover_sessions(_config(archive, manifest="sessions.yaml")) == [manifest]


def test_a_discovered_session_ingests_end_to_end(archive, rigs, tmp_path):
    source = discover_sessions(_config(archive))[0]
    report = ingest_session(source, tmp_path / "tracks" / "trial1.zarr")
    ds = open_tracks(report.out)
    assert report.n_frames == 20 and ds.sizes["view"] == 3
    assert list(ds["view"].values) == CAMERAS  # the calibration's order
    assert ds.attrs["session"] == "trial1" and ds.attrs["camera_unit"] == "mm"
    assert ds.attrs["calibration_file"] == str(archive / "calibration.toml")
    for i in range(3):
        np.testing.assert_allclose(
            ds["position"].values[:, i, :, :, 0].transpose(0, 2, 1),
            rigs["trial1"].pixels[:, i],
            rtol=1e-6,
            equal_nan=True,
        )
    assert ingest_session(source, report.out).skipped


def test_a_session_folder_with_its_own_calibration_uses_it(archive, rigs):
    # day2/ holds its own calibration, its cameras in another order; the top one serves day1/
    for day in ("day1", "day2"):
        (archive / day).mkdir()
        for c in CAMERAS:
            shutil.copy(archive / f"trial1_{c}.csv", archive / day / f"trial1_{c}.csv")
    write_calibration(archive / "day2" / "calibration.toml", rigs["trial1"].cameras[::-1])
    config = _config(archive, patterns=["day*/*.csv"], naming="relative")
    day1, day2 = discover_sessions(config)
    assert (day1.name, day2.name) == ("day1/trial1", "day2/trial1")
    assert day1.calibration == str(archive / "calibration.toml")
    assert day2.calibration == str(archive / "day2" / "calibration.toml")
    assert list(day1.views) == CAMERAS and list(day2.views) == CAMERAS[::-1]
    # an absolute calibration is every session's
    absolute = str(archive / "day2" / "calibration.toml")
    everywhere = discover_sessions(
        _config(archive, patterns=["day*/*.csv"], naming="relative", calibration=absolute)
    )
    assert {s.calibration for s in everywhere} == {absolute}


def test_dash_cam_numbers_name_sessions_like_anipose(archive, rigs):
    for trial in ("t1", "t2"):
        for i, c in enumerate(CAMERAS):
            shutil.copy(archive / f"trial1_{c}.csv", archive / f"{trial}-cam{i + 1}.csv")
    renamed = [replace(c, name=str(i + 1)) for i, c in enumerate(rigs["trial1"].cameras)]
    write_calibration(archive / "calibration.toml", renamed)
    sessions = discover_sessions(
        _config(archive, patterns=["t*-cam*.csv"], camera_regex="-cam([0-9]+)$")
    )
    assert [s.name for s in sessions] == ["t1", "t2"]
    assert sessions[0].views == {str(i + 1): str(archive / f"t1-cam{i + 1}.csv") for i in range(3)}


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"camera_regex": "_cam[A-Z]$"}, r"'_cam\[A-Z\]\$' has 0 groups; it needs exactly one"),
        ({"camera_regex": "(_)cam([A-Z])"}, r"has 2 groups; it needs exactly one.*\(\?:\.\.\.\)"),
        ({"camera_regex": "_cam([A-Z]"}, r"is not a regex"),
        ({"calibration": None}, r"archive.camera_regex is set but archive.calibration is not"),
        ({"camera_regex": None}, r"archive.calibration is set but archive.camera_regex is not"),
        ({"calibration": "../rig.toml"}, r"give a file relative to archive.path \(no '\.\.'\)"),
    ],
    ids=["no-group", "two-groups", "not-a-regex", "no-calibration", "no-regex", "outside"],
)
def test_bad_settings_are_one_config_error(archive, changes, match):
    with pytest.raises(ValueError, match=match):
        _config(archive, **changes)


def _write(root, names, source="trial1_camA.csv"):
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(root / source, root / name)


@pytest.mark.parametrize(
    ("files", "changes", "match"),
    [
        (
            ["a/trial1_camA.csv", "b/trial1_camA.csv"],
            {},
            r"files a/trial1_camA.csv and b/trial1_camA.csv are both camera 'camA' of session "
            r"'trial1' \(archive.camera_regex '_\(cam\[A-Z\]\)\$'\); with naming: stem, files in "
            r"different folders share session names: use naming: relative",
        ),
        (
            ["trial3_camB.csv"],
            {},
            r"session 'trial3' has one camera only \(camB: trial3_camB.csv\); a multi-camera "
            r"session needs a file for each of two or more cameras.*leave archive.camera_regex "
            r"unset",
        ),
        (
            ["trial2_camD.csv"],
            {},
            r"calibration.toml: no camera camD \(trial2_camD.csv\) of session 'trial2'; the "
            r"calibration's cameras: camA, camB, camC",
        ),
        (
            ["notes.csv", "trial1-side.csv"],
            {},
            r"notes.csv, trial1-side.csv match archive.patterns \['\*\*/\*.csv'\] but not "
            r"archive.camera_regex '_\(cam\[A-Z\]\)\$'.*narrow archive.patterns or fix the regex",
        ),
        (
            [],
            {"calibration": "rig.toml"},
            r"session 'trial1': no calibration: archive.calibration 'rig.toml' is in none of "
            r".*archive/; put the rig's calibration file there",
        ),
        (
            [],
            {"camera_regex": "(x?)_cam[A-Z]$"},
            r"trial1_camA.csv: archive.camera_regex '\(x\?\)_cam\[A-Z\]\$' leaves an empty "
            r"camera name of this file; its group must match the camera's name",
        ),
    ],
    ids=["camera-twice", "one-camera", "not-calibrated", "unmatched", "no-calibration", "group"],
)
def test_bad_archives_are_one_clear_discovery_error(archive, files, changes, match):
    _write(archive, files)
    before = _listing(archive)
    with pytest.raises(DiscoveryError, match=match):
        discover_sessions(_config(archive, **changes))
    assert _listing(archive) == before


def test_an_unreadable_calibration_names_it_and_the_session(archive):
    (archive / "calibration.toml").write_text("[cam_0]\nname = 'camA'\n")
    with pytest.raises(DiscoveryError, match=r"session 'trial1': calibration .*calibration.toml:"):
        discover_sessions(_config(archive))


def test_without_camera_regex_every_file_is_its_own_session(archive):
    plain = ArchiveConfig(path=str(archive), patterns=["*.csv"])
    sessions = discover_sessions(plain)
    assert [s.name for s in sessions] == [f"trial{t}_{c}" for t in (1, 2) for c in CAMERAS]
    assert all(not s.views and s.calibration is None for s in sessions)


def test_an_fsspec_archive_groups_its_views_and_reads_its_calibration(archive, tmp_path):
    import fsspec

    fs = fsspec.filesystem("memory")
    for path in archive.iterdir():
        fs.pipe_file(f"/rig-views/{path.name}", path.read_bytes())
    try:
        one, _ = discover_sessions(_config("memory://rig-views"))
        assert one.views == {c: f"memory:///rig-views/trial1_{c}.csv" for c in CAMERAS}
        assert one.calibration == "memory:///rig-views/calibration.toml"
        report = ingest_session(one, tmp_path / "trial1.zarr")
        assert list(open_tracks(report.out)["view"].values) == CAMERAS
    finally:
        fs.rm("/rig-views", recursive=True)
