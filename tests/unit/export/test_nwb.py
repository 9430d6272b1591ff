"""NWB export: pynwb opens and validates it, movement's NWB loader reads the keypoints back."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pynwb
import pytest
from movement.io import load_poses

from pipeline.errors import ExportError
from pipeline.export import export
from pipeline.export.common import fit_plan

# make check skips it: writes and validates NWB files
pytestmark = pytest.mark.slow

HOP = "lab_b/hop.zarr"


def _session_file(path, session: str):
    nwb = pynwb.NWBFile(
        session_description="a recording",
        identifier=f"{session}-recording",
        session_start_time=dt.datetime(2026, 11, 30, tzinfo=dt.UTC),
        session_id=session,
        subject=pynwb.file.Subject(subject_id="fly1", species="Drosophila melanogaster"),
    )
    nwb.add_acquisition(pynwb.TimeSeries(name="raw", data=np.zeros(5), unit="V", rate=10.0))
    with pynwb.NWBHDF5IO(str(path), mode="w") as io:
        io.write(nwb)
    return path


def _movement_keypoints(ds):
    """movement's poses dataset as (time, keypoint, space), whatever its dim names."""
    return ds["position"].isel({d: 0 for d in ds["position"].dims if d.startswith("individual")})


def test_nwb_validates_and_movement_reads_the_keypoints(hop, fits_root, tmp_path):
    path = export("nwb", fits_root / HOP, tmp_path / "hop.nwb").files[0]
    assert list(pynwb.validate(path=str(path))) == []
    with pynwb.NWBHDF5IO(str(path), mode="r") as io:
        nwb = io.read()
        pose = nwb.processing["behavior"]["PoseEstimation"]
        assert pose.source_software == "kinefit"
        assert hop.attrs["fingerprint"] in pose.description and "sha256" in pose.description
        angles = nwb.processing["behavior"]["JointAngles"]
        assert angles.unit == "degrees" and angles.data.shape == (hop.sizes["time"], 42)
        assert "lf_thorax_coxa/c_thorax-lf_coxa-yaw" in angles.description
        np.testing.assert_allclose(
            angles.data[:, 0], np.degrees(hop["dof_value"].isel(individual=0, dof=0).values)
        )
        skeleton = nwb.processing["behavior"]["Skeletons"].skeletons[pose.skeleton.name]
        assert len(skeleton.nodes) == hop.sizes["keypoint"]
    ds = load_poses.from_nwb_file(str(path))
    keypoint = "keypoint" if "keypoint" in ds.dims else "keypoints"
    names = [str(k) for k in ds[keypoint].values]
    got = _movement_keypoints(ds).transpose("time", keypoint, "space").values
    want = hop["fitted_position"].isel(individual=0).sel(keypoint=names)
    np.testing.assert_allclose(got, want.transpose("time", "keypoint", "space").values)
    assert ds.attrs["fps"] == pytest.approx(hop.attrs["fps"])


def test_nwb_added_to_the_sessions_file(hop, fits_root, tmp_path):
    source = _session_file(tmp_path / "session.nwb", "hop")
    before = source.read_bytes()
    out = export("nwb", fits_root / HOP, tmp_path / "out.nwb", session_file=source).files[0]
    assert source.read_bytes() == before  # copied, not changed
    assert list(pynwb.validate(path=str(out))) == []
    with pynwb.NWBHDF5IO(str(out), mode="r") as io:
        nwb = io.read()
        assert "raw" in nwb.acquisition and nwb.subject.subject_id == "fly1"
        assert {"PoseEstimation", "JointAngles", "Skeletons"} <= set(
            nwb.processing["behavior"].data_interfaces
        )
    assert load_poses.from_nwb_file(str(out)).sizes["time"] == hop.sizes["time"]


def test_nwb_into_a_file_of_another_session_is_refused(fits_root, tmp_path):
    other = _session_file(tmp_path / "other.nwb", "mouse_day3")
    with pytest.raises(ExportError, match=r"other.nwb is of session 'mouse_day3'.*not the fit's"):
        export("nwb", fits_root / HOP, tmp_path / "out.nwb", session_file=other)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.nwb"]


def test_nwb_one_file_per_individual(walk, fits_root, tmp_path):
    files = export("nwb", fits_root / "walk.zarr", tmp_path / "w.nwb", angles="rad").files
    assert [f.name for f in files] == ["w.individual_0.nwb", "w.individual_1.nwb"]
    with pynwb.NWBHDF5IO(str(files[1]), mode="r") as io:
        nwb = io.read()
        assert nwb.identifier == "individual_1" and nwb.session_id == "walk"
        assert nwb.processing["behavior"]["JointAngles"].unit == "radians"
    plan = fit_plan(walk)
    assert plan.name == "mannequin"
