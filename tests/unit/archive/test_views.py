"""Multi-view ingest: one DLC CSV per camera plus an Anipose calibration into one store.

The view files are read back by the DLC reader and compared with what was rendered; the
calibration's cameras come back equal; every bad input is one clear error and nothing is
written.
"""

from __future__ import annotations

import tomllib

import numpy as np
import pytest
import tomli_w
from typer.testing import CliRunner

from flows.cli.app import app
from pipeline.archive.discover import read_manifest
from pipeline.archive.ingest import ingest_session, ingest_views
from pipeline.bodyplan import load_body_plan
from pipeline.config import ArchiveConfig
from pipeline.errors import CameraError, TracksError
from pipeline.store import open_tracks
from pipeline.tracks.multiview import session_cameras, validate_multiview
from pipeline.tracks.readers.dlc import read as read_dlc
from tests.fixtures.multiview_rig import fly_rig, write_rig_session


@pytest.fixture(scope="module")
def plan(fly_plan_path):
    return load_body_plan(fly_plan_path)


@pytest.fixture(scope="module")
def rig(plan, tmp_path_factory):
    return write_rig_session(tmp_path_factory.mktemp("rig"), plan, fly_rig(3), n_frames=30)


def _listing(path):
    return sorted(p.name for p in path.iterdir())


def test_views_in_any_order_match_the_calibration_by_name(rig, tmp_path):
    backwards = dict(reversed(list(rig.views.items())))
    report = ingest_views(backwards, rig.calibration, tmp_path / "s.zarr", fps=100, unit="mm")
    ds = open_tracks(tmp_path / "s.zarr")
    assert report.n_frames == 30 and ds.sizes["view"] == 3
    assert list(ds["view"].values) == list(backwards)  # the order given
    cams = session_cameras(ds)
    by_name = {c.name: c for c in rig.cameras}
    assert all(c.allclose(by_name[c.name], rtol=1e-12, atol=1e-12) for c in cams)
    for i, view in enumerate(backwards):
        k = [c.name for c in rig.cameras].index(view)
        np.testing.assert_allclose(
            ds["position"].values[:, i, :, :, 0].transpose(0, 2, 1),
            rig.pixels[:, k],
            rtol=1e-6,
            equal_nan=True,
        )
    assert ds.attrs["frame_offset"] == [0, 0, 0] and ds.attrs["camera_unit"] == "mm"
    again = ingest_views(backwards, rig.calibration, tmp_path / "s.zarr", fps=100, unit="mm")
    assert again.skipped


def test_frame_offsets_align_the_views(rig, tmp_path):
    # camB's file starts 3 frames early: drop its first three rows
    late = tmp_path / "late.csv"
    lines = rig.views["camB"].read_text().splitlines()
    late.write_text("\n".join(lines[:3] + lines[6:]) + "\n")
    views = {**rig.views, "camB": late}
    with pytest.raises(TracksError, match=r"different frame counts \(camA: 30, camB: 27.*--offset"):
        ingest_views(views, rig.calibration, tmp_path / "s.zarr", fps=100)
    assert not (tmp_path / "s.zarr").exists()
    ingest_views(
        views, rig.calibration, tmp_path / "s.zarr", fps=100, frame_offset={"camA": 3, "camC": 3}
    )
    ds = open_tracks(tmp_path / "s.zarr")
    assert ds.sizes["time"] == 27 and ds.attrs["frame_offset"] == [3, 0, 3]
    np.testing.assert_allclose(
        ds["position"].values[:, 1, :, :, 0].transpose(0, 2, 1),
        rig.pixels[3:, 1],
        rtol=1e-6,
        equal_nan=True,
    )


def _bad_calibration(rig, tmp_path, edit):
    tables = tomllib.loads(rig.calibration.read_text())
    edit(tables)
    path = tmp_path / "bad.toml"
    path.write_text(tomli_w.dumps(tables))
    return path


@pytest.mark.parametrize(
    ("edit", "error", "match"),
    [
        (
            lambda t: t["cam_1"].update(name="side"),
            CameraError,
            r"bad.toml: no camera named 'camB' for those views; the calibration's cameras: "
            r"'camA', 'side', 'camC'",
        ),
        (
            lambda t: t["cam_0"].pop("distortions"),
            CameraError,
            r"bad.toml: camera 'camA': field 'distortion': missing distortion; expected one of the "
            r"keys distortions, dist_coeffs",
        ),
        (
            lambda t: t["cam_2"].update(rotation=[[1, 0, 0], [0, 1, 0], [0, 0, 0]]),
            CameraError,
            r"bad.toml: camera 'camC': field 'rotation'",
        ),
    ],
    ids=["names", "distortion", "rotation"],
)
def test_bad_calibrations_are_one_clear_error(rig, tmp_path, edit, error, match):
    path = _bad_calibration(rig, tmp_path, edit)
    before = _listing(tmp_path)
    with pytest.raises(error, match=match):
        ingest_views(rig.views, path, tmp_path / "s.zarr", fps=100)
    assert _listing(tmp_path) == before


def test_a_view_with_other_keypoints_is_refused(rig, tmp_path):
    other = tmp_path / "other.csv"
    lines = rig.views["camC"].read_text().splitlines()
    lines[1] = lines[1].replace("lf_claw", "nose")  # the bodyparts row
    other.write_text("\n".join(lines) + "\n")
    with pytest.raises(
        TracksError,
        match=r"other.csv: view 'camC': its keypoints differ from "
        r"view 'camA'.*extra \['nose'\], missing \['lf_claw'\]",
    ):
        ingest_views({**rig.views, "camC": other}, rig.calibration, tmp_path / "s.zarr", fps=100)
    assert not (tmp_path / "s.zarr").exists()


def test_validation_names_camera_and_view_mismatches(rig, tmp_path):
    ingest_views(rig.views, rig.calibration, tmp_path / "s.zarr", fps=100)
    ds = open_tracks(tmp_path / "s.zarr").load()
    ds.attrs["frame_offset"] = [0, -1]
    ds.attrs["cameras"] = ds.attrs["cameras"][::-1]
    with pytest.raises(TracksError, match=r"do not match the views \['camA', 'camB', 'camC'\]"):
        validate_multiview(ds, "x.zarr")


def test_manifest_entries_with_views_and_calibration(rig, tmp_path):
    root = rig.calibration.parent
    (root / "sessions.yaml").write_text(
        "sessions:\n  - name: rig/trial\n    views: {"
        + ", ".join(f"{v}: {p.name}" for v, p in rig.views.items())
        + "}\n    calibration: calibration.toml\n    fps: 100\n    options: {unit: mm}\n"
    )
    archive = ArchiveConfig(path=str(root), manifest="sessions.yaml")
    (source,) = read_manifest("sessions.yaml", archive)
    assert set(source.views) == set(rig.views) and source.calibration.endswith(".toml")
    report = ingest_session(source, tmp_path / "rig" / "trial.zarr")
    ds = open_tracks(report.out)
    assert ds.sizes["view"] == 3 and ds.attrs["session"] == "rig/trial"
    assert ds.attrs["camera_unit"] == "mm"


def test_cli_ingest_views(rig, tmp_path):
    out = tmp_path / "s.zarr"
    pairs = [f"{v}={p}" for v, p in rig.views.items()]
    result = CliRunner().invoke(
        app,
        [
            "ingest",
            "--views",
            *pairs,
            "--calibration",
            str(rig.calibration),
            "--unit",
            "mm",
            "--fps",
            "100",
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "3 views (camA, camB, camC)" in result.output
    assert open_tracks(out).sizes["view"] == 3
    bad = CliRunner().invoke(
        app,
        [
            "ingest",
            "--views",
            "camA",
            "-o",
            str(tmp_path / "x.zarr"),
            "--calibration",
            str(rig.calibration),
        ],
    )
    assert bad.exit_code == 1
    assert "--views 'camA': no such file or folder; expected CAMERA=PATH" in bad.output


def test_dlc_reader_reads_the_written_view(rig):
    ds = read_dlc(rig.views["camA"], fps=100)
    assert list(ds["keypoint"].values)[:2] == list(rig.truth["keypoint"].values)[:2]
