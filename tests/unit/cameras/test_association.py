"""People matched across calibrated views, on synthetic people and on Pose2Sim's demo,
held against the person Pose2Sim's own triangulation used."""

from __future__ import annotations

import itertools
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from flows.cli import app
from pipeline.archive.view_files import read_views
from pipeline.cameras import Camera, pack, project, read_calibration
from pipeline.cameras.association import AssociationSettings, associate_people
from pipeline.errors import CameraError, TracksError
from pipeline.tracks.pose_skeletons import SKELETONS
from pipeline.tracks.readers import trc
from tests.fixtures.shared_data import SHARED

DEMO = SHARED / "data" / "pose2sim"
FOLDERS = [DEMO / "pose" / f"cam0{i}_json" for i in range(1, 5)]


def _ring(n: int = 3) -> list[Camera]:
    """``n`` cameras on a 4 m circle looking at the origin (world Z up)."""
    cams = []
    for k in range(n):
        a = 2 * np.pi * k / n
        centre = np.array([4 * np.cos(a), 4 * np.sin(a), 1.0])
        z = -centre / np.linalg.norm(centre)
        x = np.cross(z, [0, 0, 1.0])
        x /= np.linalg.norm(x)
        rot = np.stack([x, np.cross(z, x), z])
        cams.append(
            Camera(
                name=f"c{k}",
                size=(1000, 1000),
                fx=800.0,
                fy=800.0,
                cx=500.0,
                cy=500.0,
                rotation=tuple(map(tuple, rot)),
                translation=tuple(-rot @ centre),
                unit="m",
            )
        )
    return cams


def _people(rng, cams, swap_view: int, ghost_view: int):
    """Two people seen by every view, candidates in shuffled order; in ``ghost_view``
    person A is replaced by a detection far from anyone."""
    a = rng.normal([0, 0, 1], 0.3, (6, 3))
    b = a + [1.2, -0.8, 0]
    arrays = pack(cams)
    pix = np.stack([project(arrays, a[:, None]), project(arrays, b[:, None])], -1)  # K,V,2,I
    pix = pix.transpose(1, 2, 0, 3)[None].copy()  # (1, V, 2, K, I)
    pix[0, swap_view] = pix[0, swap_view, ..., ::-1]
    pix += rng.normal(0, 0.5, pix.shape)
    truth = np.zeros((1, len(cams)), int)
    truth[0, swap_view] = 1
    ghost = pix.copy()
    ghost[0, ghost_view, :, :, truth[0, ghost_view]] += 150.0
    return pix, ghost, truth


def test_the_person_every_view_agrees_on_wins_and_a_disagreeing_view_sits_out(rng):
    cams = _ring(3)
    pix, ghost, truth = _people(rng, cams, swap_view=1, ghost_view=2)
    conf = np.ones((1, 3, 6, 2))
    names = [f"k{i}" for i in range(6)]
    index, error = associate_people(cams, pix, conf, names)
    np.testing.assert_array_equal(index, truth)  # person A: the first candidate of c0
    assert error[0] < 2.0
    # c2's detection of A moved 150 px: B is still seen alike by every view and wins
    index, _ = associate_people(cams, ghost, conf, names)
    np.testing.assert_array_equal(index, 1 - truth)
    # A alone with c2's detection moved: no consistent triple, so c2 sits out
    alone = np.take_along_axis(ghost, truth[:, :, None, None, None], axis=-1)
    index, error = associate_people(cams, alone, conf[..., :1], names)
    np.testing.assert_array_equal(index, [[0, 0, -1]])
    assert error[0] < 2.0
    # confidences under the threshold make a detection unusable, like a missing one
    low = conf.copy()
    low[0, 1, :, 1] = 0.1
    index, _ = associate_people(cams, pix, low, names)
    np.testing.assert_array_equal(index, [[1, 0, 1]])  # c1 has only B left: B everywhere
    with pytest.raises(TracksError, match=r"association keypoints \['Neck'\] are not tracked"):
        associate_people(cams, pix, conf, names, AssociationSettings(keypoints=("Neck",)))
    with pytest.raises(CameraError, match="min_views must be >= 2"):
        AssociationSettings(min_views=1)


def _dlt(cams, pixels, weights):
    """Pose2Sim's triangulation: weighted DLT of raw pixels with P = K [R | t]."""
    rows = []
    for cam, (x, y), w in zip(cams, pixels, weights, strict=True):
        p = cam.matrix @ np.hstack([cam.rotation_matrix, cam.tvec.reshape(3, 1)])
        rows += [w * (p[0] - x * p[2]), w * (p[1] - y * p[2])]
    h = np.linalg.svd(np.array(rows))[2][-1]
    return h[:3] / h[3]


@pytest.fixture(scope="module")
def demo():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the skipped *.json.old files
        return read_views(FOLDERS, DEMO / "Calib.toml", fps=60, up_axis="z")


def test_pose2sim_demo_comes_out_as_pose2sims_person(demo):
    index = demo["person_index"].values
    assert demo.attrs["association"]["keypoints"] == ["Neck"]
    assert list(demo["individual"].values) == ["person"]
    cams = read_calibration(DEMO / "Calib.toml")
    ref = trc.read(DEMO / "pose-3d" / "S00_P00_T01_BalancingTrial_0-100.trc")
    xyz = ref["position"].isel(individual=0).transpose("time", "keypoint", "space").values
    world = xyz[..., [2, 0, 1]]  # the .trc's axes are a permutation of the world's
    names = [str(k) for k in ref["keypoint"].values]
    skeleton = SKELETONS["BODY_25B"]
    # cam01 frame 37: three candidates, the largest is not the one Pose2Sim triangulated
    people = json.loads((FOLDERS[0] / "cam01.0037.json").read_text())["people"]
    raw = [np.array(p["pose_keypoints_2d"]).reshape(-1, 3) for p in people]
    area = [np.ptp(r[r[:, 2] > 0, :2], axis=0).prod() for r in raw]
    proj = project(pack([cams[0]]), world[37][:, None])[:, 0]
    near = [
        np.median([np.linalg.norm(r[skeleton.index(n), :2] - proj[k]) for k, n in enumerate(names)
                   if r[skeleton.index(n), 2] > 0])
        for r in raw
    ]  # fmt: skip
    assert int(np.argmax(area)) != int(np.argmin(near))
    assert index[37, 0] == int(np.argmin(near)) and near[index[37, 0]] < 10.0
    np.testing.assert_array_equal(index[37], [0, 0, 0, 0])
    # cam03 frame 52: its one detection disagrees; Pose2Sim's .trc there is the DLT of
    # cam01, cam02 and cam04 alone (to 1e-6 m), so cam03 sat out of its association too
    np.testing.assert_array_equal(index[52], [0, 0, -1, 0])
    assert demo["position"].isel(time=52, view=2).isnull().all()
    neck = skeleton.index("Neck")
    dets = [json.loads((f / f"{f.name[:5]}.0052.json").read_text())["people"][0] for f in FOLDERS]
    kp = [np.array(d["pose_keypoints_2d"]).reshape(-1, 3)[neck] for d in dets]
    used = [0, 1, 3]
    point = _dlt([cams[i] for i in used], [kp[i][:2] for i in used], [kp[i][2] for i in used])
    np.testing.assert_allclose(point, world[52, names.index("Neck")], atol=1e-6)
    # every other camera-frame keeps the one candidate Pose2Sim kept
    others = [(t, v) for t, v in itertools.product(range(100), range(4)) if (t, v) != (52, 2)]
    assert all(index[t, v] == 0 for t, v in others)
    assert float(np.nanmedian(demo["association_error"].values)) < 15.0


def _tracked_folders(tmp_path: Path, rng) -> list[Path]:
    out = []
    for cam in ("cam1", "cam2"):
        folder = tmp_path / f"{cam}_json"
        folder.mkdir()
        for t in range(3):
            people = [
                {"person_id": [pid], "pose_keypoints_2d": list(rng.uniform(10, 900, 75))}
                for pid in ((4, 7) if t % 2 else (7, 4))
            ]
            body = {"version": 1.3, "people": people}
            (folder / f"{cam}.{t:04d}.json").write_text(json.dumps(body))
        out.append(folder)
    return out


def test_a_person_id_is_followed_and_one_that_never_appears_is_one_error(tmp_path, rng):
    folders = _tracked_folders(tmp_path, rng)
    calib = tmp_path / "calib.toml"
    lines = []
    for cam in _ring(2):
        lines += [
            f"[{cam.name}]",
            f'name = "{cam.name}"',
            "size = [1000, 1000]",
            f"matrix = {cam.matrix.tolist()}",
            "distortions = [0.0, 0.0, 0.0, 0.0]",
            f"rotation = {cam.rvec.tolist()}",
            f"translation = {cam.tvec.tolist()}",
            "fisheye = false",
        ]
    calib.write_text("\n".join(lines) + "\n")
    args = ["ingest", "--views", *map(str, folders), "--calibration", str(calib), "--fps", "30"]
    out = tmp_path / "seven.zarr"
    args += ["-O", "skeleton=BODY_25"]
    ok = CliRunner().invoke(app, [*args, "-o", str(out), "-O", "person_id=7"])
    assert ok.exit_code == 0, ok.output
    from pipeline.store import open_tracks

    ds = open_tracks(out)
    np.testing.assert_array_equal(ds["person_index"].values, [[0, 0], [1, 1], [0, 0]])
    assert ds.attrs["association"] == {"method": "person_id", "person_id": 7}
    missing = tmp_path / "nine.zarr"
    bad = CliRunner().invoke(app, [*args, "-o", str(missing), "-O", "person_id=9"])
    assert bad.exit_code == 1, bad.output
    assert "person id 9 never appears in view(s) c0, c1" in " ".join(bad.output.split())
    assert "ids per view" in bad.output and "4, 7" in bad.output
    assert not missing.exists()
