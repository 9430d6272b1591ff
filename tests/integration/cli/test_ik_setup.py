"""``kinefit ik SETUP.xml`` on OpenSim's own tutorial setups, held against OpenSim's
published results and OpenSim's own forward kinematics and ``Storage`` reader."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from flows.cli import app
from pipeline.tracks.opensim_storage import read_storage
from pipeline.tracks.readers import trc
from tests.fixtures.shared_data import SHARED

osim = pytest.importorskip("opensim")
osim.Logger.setLevelString("error")

DATA = SHARED / "data" / "opensim"
ARM = DATA / "arm26" / "arm26_Setup_InverseKinematics.xml"
GAIT = DATA / "gait2392" / "subject01_Setup_IK.xml"
runner = CliRunner()


def _copy_setup(src: Path, tmp: Path, **changes: str) -> Path:
    """``src`` in ``tmp`` with its input paths absolute and ``changes`` applied."""
    tree = ET.parse(src)
    tool = tree.getroot().find("InverseKinematicsTool")
    for tag in ("model_file", "marker_file"):
        node = tool.find(tag)
        node.text = str(src.parent / node.text.strip())
    for tag, value in changes.items():
        if tag.startswith("task:"):
            old, new = tag[5:], value
            for node in tool.iter():
                if node.get("name") == old:
                    node.set("name", new)
            continue
        tool.find(tag).text = value
    out = tmp / src.name
    tree.write(out)
    return out


def _ik(*args: str):
    return runner.invoke(app, ["ik", *map(str, args)])


def _compare(written: Path, published: Path) -> dict[str, tuple[float, float]]:
    """Per coordinate (RMS, max) of written minus published on the published times."""
    mine, ref = read_storage(written), read_storage(published)
    tm, tr = mine["time"].values, ref["time"].values
    sel = (tr >= tm[0] - 1e-9) & (tr <= tm[-1] + 1e-9)
    out = {}
    for c in [str(c) for c in mine["coordinate"].values]:
        a = mine["value"].sel(coordinate=c).values
        b = ref["value"].sel(coordinate=c).values[sel]
        d = np.interp(tr[sel], tm, a) - b
        out[c] = (float(np.sqrt(np.mean(d * d))), float(np.abs(d).max()))
    return out


def _opensim_markers(model_file: Path, motion: Path, names: list[str]) -> np.ndarray:
    """OpenSim's marker positions (T, M, 3) in metres at every row of ``motion``."""
    model = osim.Model(str(model_file))
    state = model.initSystem()
    cs = model.getCoordinateSet()
    table = read_storage(motion)
    values = table["value"].transpose("time", "coordinate").values
    cols = [str(c) for c in table["coordinate"].values]
    out = np.zeros((values.shape[0], len(names), 3))
    markers = model.getMarkerSet()
    for t in range(values.shape[0]):
        for j, c in enumerate(cols):
            if not cs.contains(c):
                continue
            coord = cs.get(c)
            v = values[t, j]
            coord.setValue(state, np.radians(v) if coord.getMotionType() == 1 else v, False)
        model.realizePosition(state)
        for m, name in enumerate(names):
            p = markers.get(name).getLocationInGround(state)
            out[t, m] = [p.get(0), p.get(1), p.get(2)]
    return out


def _weighted_errors(setup: Path, motion: Path) -> np.ndarray:
    """``sum_i weight_i |trc_i - opensim_fk_i|^2`` (m^2) per row of ``motion``."""
    tool = ET.parse(setup).getroot().find("InverseKinematicsTool")
    tasks = {
        n.get("name"): float(n.find("weight").text)
        for n in tool.iter("IKMarkerTask")
        if n.find("apply").text.strip() == "true"
    }
    names = list(tasks)
    tracks = trc.read(setup.parent / tool.find("marker_file").text.strip(), fps=None)
    times = read_storage(motion)["time"].values
    idx = [int(np.argmin(np.abs(tracks["time"].values - t))) for t in times]
    obs = tracks["position"].isel(individual=0, time=idx).sel(keypoint=names)
    obs = np.asarray(obs.transpose("time", "keypoint", "space").values) / 1000.0  # mm
    model_file = setup.parent / tool.find("model_file").text.strip()
    d2 = np.sum((_opensim_markers(model_file, motion, names) - obs) ** 2, axis=-1)
    return np.nansum(d2 * np.array([tasks[n] for n in names]), axis=1)


def test_arm26_matches_opensims_published_angles(tmp_path):
    setup = _copy_setup(ARM, tmp_path, results_directory=str(tmp_path))
    result = _ik(setup)
    assert result.exit_code == 0, result.output
    motion = tmp_path / "arm26_InverseKinematics.mot"
    stats = _compare(motion, ARM.parent / "arm26_InverseKinematics.mot")
    print("arm26 RMS/max deg:", stats)
    assert set(stats) == {"r_shoulder_elev", "r_elbow_flex"}
    assert all(rms < 0.01 for rms, _ in stats.values())
    errors = osim.Storage(str(tmp_path / "arm26_ik_marker_errors.sto"))
    assert errors.getSize() == 121
    labels = errors.getColumnLabels()
    assert [labels.get(i) for i in range(labels.getSize())] == [
        "time",
        "total_squared_error",
        "marker_error_RMS",
        "marker_error_max",
    ]


@pytest.fixture(scope="module")
def gait(tmp_path_factory):
    out = tmp_path_factory.mktemp("gait_ik")
    result = _ik(GAIT, "--output", out)
    assert result.exit_code == 0, result.output
    return out / "subject01_walk1_ik.mot", out / "subject01_ik_marker_errors.sto"


def test_gait2392_matches_opensims_published_angles(gait):
    motion, _ = gait
    stats = _compare(motion, GAIT.parent / "subject01_walk1_ik.mot")
    for c, (rms, mx) in stats.items():
        unit = "mm" if c in ("pelvis_tx", "pelvis_ty", "pelvis_tz") else "deg"
        f = 1000.0 if unit == "mm" else 1.0
        print(f"gait2392 {c:18s} RMS {rms * f:.4f} max {mx * f:.4f} {unit}")
    assert len(stats) == 23
    for c, (rms, mx) in stats.items():
        if c in ("pelvis_tx", "pelvis_ty", "pelvis_tz"):
            assert rms < 1e-4, c  # 0.1 mm
        else:
            assert rms < 0.05 and mx < 0.2, c


def test_gait2392_weighted_marker_error_no_larger_than_opensims(gait):
    motion, errors = gait
    ours = _weighted_errors(GAIT, motion)
    ref_motion = GAIT.parent / "subject01_walk1_ik.mot"
    ref = _weighted_errors(GAIT, ref_motion)
    times = read_storage(motion)["time"].values
    ref_times = read_storage(ref_motion)["time"].values
    ref = np.array([ref[int(np.argmin(np.abs(ref_times - t)))] for t in times])
    print(
        f"weighted marker error m^2: kinefit mean {ours.mean():.6e}, OpenSim {ref.mean():.6e},"
        f" kinefit lower on {(ours <= ref).mean():.0%} of frames, worst ratio "
        f"{(ours / ref).max():.6f}"
    )
    # the published .mot has 6+ significant digits, so OpenSim's FK of it is a few 1e-6 off
    assert np.all(ours <= ref * (1 + 1e-4))
    assert ours.mean() < ref.mean()
    # the written errors are OpenSim's unweighted marker errors of the written angles
    sto = read_storage(errors)
    assert sto.sizes["time"] == 121 and osim.Storage(str(errors)).getSize() == 121


def test_gait2392_mot_opens_in_opensim_storage(gait):
    motion, _ = gait
    st = osim.Storage(str(motion))
    assert st.getSize() == 121 and st.isInDegrees()
    labels = st.getColumnLabels()
    names = [labels.get(i) for i in range(labels.getSize())]
    model = osim.Model(str(GAIT.parent / "subject01_simbody.osim"))
    cs = model.getCoordinateSet()
    assert names == ["time"] + [cs.get(i).getName() for i in range(cs.getSize())]


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"model_file": "nowhere.osim"}, "model_file: 'nowhere.osim' not found"),
        ({"marker_file": "nowhere.trc"}, "marker_file: 'nowhere.trc' not found"),
        ({"task:Sternum": "NoSuchMarker"}, "IKMarkerTask['NoSuchMarker']: no marker"),
        (
            {"task:subtalar_angle_r": "no_such_coord"},
            "IKCoordinateTask['no_such_coord']: no coordinate",
        ),
    ],
)
def test_bad_setups_name_file_and_field_and_write_nothing(tmp_path, changes, needle):
    setup = _copy_setup(GAIT, tmp_path, **changes)
    out = tmp_path / "out"
    result = _ik(setup, "--output", out)
    assert result.exit_code == 1
    text = " ".join(result.output.split())
    assert needle in text and str(setup.name) in text, text
    assert not out.exists() or not any(out.iterdir())


def _with_task(setup: Path, xml: str, coordinate_file: str | None = None) -> None:
    text = setup.read_text().replace("</objects>", xml + "</objects>", 1)
    if coordinate_file is not None:
        text = text.replace(
            "<coordinate_file> Unassigned </coordinate_file>",
            f"<coordinate_file>{coordinate_file}</coordinate_file>",
        )
    setup.write_text(text)


@pytest.mark.parametrize("value_type", ["manual_value", "from_file"])
def test_coordinate_tasks_hold_their_targets(tmp_path, value_type):
    """A heavy task holds the elbow at 0.5 rad (manual) or at a .mot's trajectory."""
    setup = _copy_setup(ARM, tmp_path, results_directory=str(tmp_path))
    target = tmp_path / "target.mot"
    t = np.linspace(0.0, 1.0, 11)
    deg = 10.0 + 40.0 * t
    target.write_text(
        "target\nversion=1\nnRows=11\nnColumns=2\ninDegrees=yes\nendheader\n"
        "time\tr_elbow_flex\n" + "".join(f"{a}\t{b}\n" for a, b in zip(t, deg, strict=True))
    )
    _with_task(
        setup,
        f'<IKCoordinateTask name="r_elbow_flex"><apply>true</apply><weight>1e6</weight>'
        f"<value_type>{value_type}</value_type><value>0.5</value></IKCoordinateTask>",
        coordinate_file="target.mot",
    )
    result = _ik(setup)
    assert result.exit_code == 0, result.output
    mine = read_storage(tmp_path / "arm26_InverseKinematics.mot")
    elbow = mine["value"].sel(coordinate="r_elbow_flex").values
    want = (
        np.full_like(elbow, np.degrees(0.5))
        if value_type == "manual_value"
        else np.interp(mine["time"].values, t, deg)
    )
    np.testing.assert_allclose(elbow, want, atol=0.05)  # degrees; marker pull ~1e-6 rad
    free = _compare(
        tmp_path / "arm26_InverseKinematics.mot", ARM.parent / "arm26_InverseKinematics.mot"
    )
    assert free["r_elbow_flex"][0] > 1.0  # far from the untasked fit: the task acted


@pytest.mark.parametrize("held", [True, False], ids=["mtp-tasks", "no-mtp-tasks"])
def test_the_unobservable_warning_leaves_out_what_a_coordinate_task_sets(tmp_path, held):
    """subject01's toes have no marker; the setup's tasks hold mtp_angle_r/l at 0."""
    import warnings

    from pipeline.bodyplan.load_errors import UnobservableDofWarning
    from pipeline.opensim_setup.ik_run import ik_problem

    setup = _copy_setup(GAIT, tmp_path)
    if not held:
        tree = ET.parse(setup)
        for tasks in tree.getroot().iter("objects"):
            for task in list(tasks):
                if task.get("name", "").startswith("mtp_angle"):
                    tasks.remove(task)
        tree.write(setup)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ik_problem(setup)
    said = [str(w.message) for w in caught if issubclass(w.category, UnobservableDofWarning)]
    if held:
        assert not said, said
    else:
        assert len(said) == 1 and "no coordinate task" in said[0], said
        assert "'toes_r' (mtp_angle_r)" in said[0] and "'toes_l' (mtp_angle_l)" in said[0]
