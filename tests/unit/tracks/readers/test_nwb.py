"""NWB files with ndx-pose pose estimates written with pynwb (the optional extra ``nwb``)."""

from __future__ import annotations

import datetime
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from pipeline.tracks import TracksError, read_tracks
from tests.fixtures.readers_interop import assert_same_tracks

pynwb = pytest.importorskip("pynwb", reason="NWB files need pynwb + ndx-pose: the 'nwb' extra")
ndx_pose = pytest.importorskip("ndx_pose", reason="NWB files need ndx-pose: the 'nwb' extra")

from pipeline.tracks.readers import nwb  # noqa: E402

NODES = ("nose", "ear_l", "tail")


def new_file(subject_id: str | None = "mouse7"):
    f = pynwb.NWBFile(
        session_description="open field",
        identifier="s1",
        session_start_time=datetime.datetime(2025, 5, 1, tzinfo=datetime.UTC),
    )
    if subject_id:
        f.subject = pynwb.file.Subject(subject_id=subject_id, species="Mus musculus")
    return f


def add_estimate(nwbfile, name, data, conf, *, subject=None, clock=None, order=NODES):
    """Add a PoseEstimation whose series (in ``order``) hold ``data[k] (T, space)``."""
    clock = clock or {"rate": 30.0}
    module = nwbfile.processing.get("behavior") or nwbfile.create_processing_module(
        name="behavior", description="pose"
    )
    skeleton = ndx_pose.Skeleton(
        name=f"{name}_skeleton",
        nodes=list(NODES),
        edges=np.array([[0, 1], [1, 2]], dtype="uint8"),
        subject=subject,
    )
    if "Skeletons" in module.data_interfaces:
        module["Skeletons"].add_skeletons(skeleton)
    else:
        module.add(ndx_pose.Skeletons(skeletons=[skeleton]))
    series = [
        ndx_pose.PoseEstimationSeries(
            name=kp,
            data=data[NODES.index(kp)],
            confidence=conf[NODES.index(kp)],
            unit="pixels",
            reference_frame="(0,0) is the top left corner of the video",
            **clock,
        )
        for kp in order
    ]
    module.add(
        ndx_pose.PoseEstimation(
            name=name,
            pose_estimation_series=series,
            skeleton=skeleton,
            source_software="SLEAP",
            description="estimated",
        )
    )


def write(nwbfile, path: Path) -> Path:
    with pynwb.NWBHDF5IO(str(path), "w") as io:
        io.write(nwbfile)
    return path


def poses(rng, n_frames=6, n_space=2):
    data = rng.uniform(0, 500, (len(NODES), n_frames, n_space))
    conf = rng.uniform(0, 1, (len(NODES), n_frames))
    return data, conf


def test_one_subject_is_read_value_by_value_in_skeleton_order(tmp_path: Path, rng) -> None:
    data, conf = poses(rng)
    f = new_file()
    add_estimate(f, "PoseEstimation", data, conf, subject=f.subject, order=NODES[::-1])
    path = write(f, tmp_path / "session.nwb")
    assert nwb.sniff(path)
    ds = read_tracks(path)
    assert list(ds.keypoint.values) == list(NODES)
    assert list(ds.individual.values) == ["mouse7"]
    np.testing.assert_array_equal(
        ds.position.values[..., 0], data.transpose(1, 2, 0).astype(np.float32)
    )
    np.testing.assert_array_equal(ds.confidence.values[..., 0], conf.T.astype(np.float32))
    assert (ds.attrs["fps"], ds.attrs["unit"], ds.attrs["up_axis"]) == (30.0, "px", None)
    assert ds.attrs["source_software"] == "SLEAP" and ds.attrs["source_format"] == "nwb"
    np.testing.assert_allclose(ds.time.values, np.arange(6) / 30)


def test_two_pose_estimations_are_two_individuals(tmp_path: Path, rng) -> None:
    (d1, c1), (d2, c2) = poses(rng, n_space=3), poses(rng, n_space=3)
    f = new_file(subject_id=None)
    add_estimate(f, "mouse_a", d1, c1)
    add_estimate(f, "mouse_b", d2, c2)
    ds = nwb.read(write(f, tmp_path / "pair.nwb"))
    assert list(ds.individual.values) == ["mouse_a", "mouse_b"]
    assert list(ds.space.values) == ["x", "y", "z"]
    got = ds.position.sel(individual="mouse_b").values  # (time, space, keypoint)
    np.testing.assert_array_equal(got, d2.transpose(1, 2, 0).astype(np.float32))


def test_timestamps_give_time_and_an_estimated_fps(tmp_path: Path, rng) -> None:
    data, conf = poses(rng)
    stamps = 10.0 + np.arange(6) / 50.0
    f = new_file()
    add_estimate(f, "PoseEstimation", data, conf, clock={"timestamps": stamps})
    ds = nwb.read(write(f, tmp_path / "stamped.nwb"))
    np.testing.assert_allclose(ds.time.values, stamps)
    assert ds.attrs["fps"] == pytest.approx(50.0) and ds.attrs["fps_estimated"] is True


def test_file_without_pose_estimation_fails(tmp_path: Path) -> None:
    f = new_file()
    f.create_processing_module(name="behavior", description="empty")
    path = write(f, tmp_path / "empty.nwb")
    with pytest.raises(TracksError, match=r"empty\.nwb: no ndx-pose PoseEstimation"):
        nwb.read(path)
    with pytest.raises(TracksError, match=r"no processing module 'ecephys'; modules: \['behavior'"):
        nwb.read(path, processing_module="ecephys")


def test_truncated_file_fails(tmp_path: Path, rng) -> None:
    data, conf = poses(rng, n_frames=2000)
    f = new_file()
    add_estimate(f, "PoseEstimation", data, conf)
    path = write(f, tmp_path / "cut.nwb")
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(TracksError, match=r"cut\.nwb: not a readable NWB file"):
        nwb.read(path)


def test_unknown_keypoint_in_the_map_fails(tmp_path: Path, rng) -> None:
    data, conf = poses(rng)
    f = new_file()
    add_estimate(f, "PoseEstimation", data, conf)
    path = write(f, tmp_path / "s.nwb")
    with pytest.raises(TracksError, match=r"\['snout'\] that the file does not have.*'nose'"):
        read_tracks(path, format="nwb", keypoint_map={"snout": "nose_tip"})


def test_without_pynwb_the_error_names_the_extra(tmp_path: Path, rng, monkeypatch) -> None:
    data, conf = poses(rng)
    f = new_file()
    add_estimate(f, "PoseEstimation", data, conf)
    path = write(f, tmp_path / "s.nwb")
    monkeypatch.setitem(sys.modules, "pynwb", None)  # as if the extra were not installed
    with pytest.raises(TracksError, match=r"s\.nwb: reading NWB files needs .*kinefit\[nwb\]"):
        nwb.read(path)


def test_movement_loader_agrees(tmp_path: Path, rng) -> None:
    load_poses = pytest.importorskip(
        "movement.io.load_poses", reason="movement (the optional interop extra) is not installed"
    )
    data, conf = poses(rng)
    f = new_file()
    add_estimate(f, "PoseEstimation", data, conf, subject=f.subject)
    path = write(f, tmp_path / "session.nwb")
    theirs = load_poses.from_nwb_file(path)
    assert_same_tracks(nwb.read(path), theirs, individuals=False)


def add_multi_camera(nwbfile, data3d, views, *, with_3d=True):
    """A MultiCameraPoseEstimation: 3D series and one 2D PoseEstimation per camera."""
    module = nwbfile.create_processing_module(name="behavior", description="pose")
    skeleton = ndx_pose.Skeleton(
        name="mouse_skeleton", nodes=list(NODES), edges=np.array([[0, 1]], dtype="uint8")
    )
    module.add(ndx_pose.Skeletons(skeletons=[skeleton]))

    def series(data, unit):
        return [
            ndx_pose.PoseEstimationSeries(
                name=kp,
                data=data[k],
                confidence=np.ones(data.shape[1]),
                unit=unit,
                rate=30.0,
                reference_frame="world" if data.shape[2] == 3 else "image",
            )
            for k, kp in enumerate(NODES)
        ]

    cameras = []
    for name, data2d in views.items():
        device = nwbfile.create_device(name=f"{name}_device")
        cameras.append(
            ndx_pose.PoseEstimation(
                name=name,
                pose_estimation_series=series(data2d, "pixels"),
                skeleton=skeleton,
                device=device,
            )
        )
    module.add(
        ndx_pose.MultiCameraPoseEstimation(
            name="MultiCameraPoseEstimation",
            pose_estimation_series=series(data3d, "mm") if with_3d else None,
            pose_estimations=cameras,
            skeleton=skeleton,
            source_software="anipose",
        )
    )


def test_nested_multi_camera_estimates_are_found(tmp_path: Path, rng) -> None:
    data3d = rng.uniform(0, 50, (len(NODES), 5, 3))
    views = {
        "cam0": rng.uniform(0, 500, (len(NODES), 5, 2)),
        "cam1": rng.uniform(0, 500, (len(NODES), 5, 2)),
    }
    f = new_file()
    add_multi_camera(f, data3d, views)
    path = write(f, tmp_path / "multi.nwb")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "cached namespace" warning
        ds = read_tracks(path)
    assert list(ds.space.values) == ["x", "y", "z"] and ds.attrs["unit"] == "mm"
    np.testing.assert_allclose(ds.position.values[..., 0], data3d.transpose(1, 2, 0))
    view = read_tracks(path, camera_view="cam1")
    assert view.attrs["unit"] == "px"
    np.testing.assert_allclose(view.position.values[..., 0], views["cam1"].transpose(1, 2, 0))
    with pytest.raises(TracksError, match=r"option 'camera_view': 'cam7' is not a camera view"):
        read_tracks(path, camera_view="cam7")


def test_multi_camera_without_3d_asks_for_a_view(tmp_path: Path, rng) -> None:
    f = new_file()
    add_multi_camera(f, None, {"cam0": rng.uniform(0, 500, (len(NODES), 5, 2))}, with_3d=False)
    path = write(f, tmp_path / "views.nwb")
    with pytest.raises(TracksError, match=r"has no 3D series; pass camera_view=.*\['cam0'\]"):
        read_tracks(path)
