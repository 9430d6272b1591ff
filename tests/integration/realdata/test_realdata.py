"""Every real tracking file in ``../shared/data/realdata`` ingests and agrees with an
independent read (see ``PROVENANCE.md`` there; the files are read in place).

Covered: every file outside ``unclaimed/``, plus the SLEAP ``.slp`` files there. Each is
read with :func:`pipeline.tracks.read_tracks`, written to a tracks store and opened back
(an ingest), and compared value by value with a read by the format's own engine or a
general library (:mod:`tests.fixtures.realdata_refs`); where the ``movement`` package can
load the file, its loader must agree too.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from pipeline.store import open_tracks, write_tracks
from pipeline.tracks import read_tracks
from tests.fixtures import realdata_refs as refs
from tests.fixtures.readers_interop import assert_same_tracks
from tests.fixtures.shared_data import SHARED

REALDATA = SHARED / "data" / "realdata"
#: Frame rate passed for files that do not record one (the file's own rate wins).
FPS = 30.0


def _files() -> list[Path]:
    if not REALDATA.is_dir():
        return []
    found = sorted(p for p in REALDATA.rglob("*") if p.is_file() and p.suffix != ".md")
    return [p for p in found if "unclaimed" not in p.parts or p.suffix == ".slp"]


FILES = _files()
IDS = [str(p.relative_to(REALDATA)) for p in FILES]
#: Folders whose files record their frame rate (``fps`` is passed to the others).
OWN_RATE = ("c3d", "bvh", "nwb", "movement")


#: Files whose reading warns on purpose (the rest read quietly), and what the warning says.
EXPECTED_WARNINGS = {"0.1.1_poseestimation_nodes_edges.nwb": "mixed 2D and 3D pose estimation"}


def _read(path: Path, **options):
    own = path.parent.name in OWN_RATE and "no-fps" not in path.name
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # real files read quietly (no namespace or fps noise)
        expected = EXPECTED_WARNINGS.get(path.name)
        if expected is None:
            return read_tracks(path, fps=None if own else FPS, **options)
        with pytest.warns(UserWarning, match=expected):
            return read_tracks(path, fps=None if own else FPS, **options)


def _reference(path: Path, ours):
    kind = "slp" if path.suffix == ".slp" else path.parent.name
    if kind in ("dlc", "lightningpose"):
        return refs.ref_dlc(path), None
    if kind == "sleap":
        return refs.ref_sleap_analysis(path), None
    if kind == "slp":
        return refs.ref_slp(path), None
    if kind == "anipose":
        return refs.ref_anipose(path), None
    if kind == "movement":
        return refs.ref_movement_nc(path), None
    if kind == "nwb":
        return refs.ref_nwb(path), None
    if kind == "c3d":
        return refs.ref_c3d(path, ours), None
    raise AssertionError(f"no independent reader for {path}")


def test_the_corpus_is_there():
    if not REALDATA.is_dir():
        pytest.fail(f"shared data not found at {REALDATA}; set KINEFIT_SHARED")
    assert len(FILES) >= 35, IDS  # 33 claimed formats + the 2 .slp files of unclaimed/


@pytest.mark.slow
@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_real_file_ingests_and_agrees_with_an_independent_read(path: Path, tmp_path: Path):
    if path.parent.name == "bvh":
        return _check_bvh(path, tmp_path)
    ours = _read(path)
    stored = open_tracks(write_tracks(ours, tmp_path / "t.zarr"))
    np.testing.assert_array_equal(stored["position"].values, ours["position"].values)
    assert stored.attrs["unit"] == ours.attrs["unit"] and stored.attrs["fps"] > 0
    ref, frames = _reference(path, ours)
    refs.assert_matches(ours, ref, frames=frames)
    assert ours.attrs["unit"] in ("px", "mm", "m", "unknown")


def _check_bvh(path: Path, tmp_path: Path) -> None:
    ours = _read(path, translation="replace")  # the reading PyMO and bvhio use
    write_tracks(ours, tmp_path / "t.zarr")
    frames = np.unique(np.linspace(0, ours.sizes["time"] - 1, 4).astype(int))
    ref = refs.ref_bvh(path, frames)
    joints = ours.sel(keypoint=[k for _, k in ref])  # end sites: bvhio has no point for them
    refs.assert_matches(joints, ref, frames=frames)
    spec = _read(path)  # default: the BVH description, root OFFSET added
    shift = (spec["position"] - ours["position"]).values
    np.testing.assert_allclose(shift, np.broadcast_to(shift[:1], shift.shape), atol=1e-3)
    assert spec.attrs["fps"] == round(spec.attrs["fps"])  # Frame Time 0.008333 is 120 fps


MOVEMENT = {
    "dlc": "DeepLabCut",
    "lightningpose": "LightningPose",
    "sleap": "SLEAP",
    "anipose": "Anipose",
    "nwb": "NWB",
}


@pytest.mark.slow
@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_movement_agrees_where_it_reads_the_file(path: Path):
    load_poses = pytest.importorskip("movement.io.load_poses", reason="movement is not installed")
    software = "SLEAP" if path.suffix == ".slp" else MOVEMENT.get(path.parent.name)
    if software is None:
        pytest.skip(f"movement has no loader for {path.parent.name} files")
    ours = _read(path)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = load_poses.from_file(path, source_software=software, fps=ours.attrs["fps"])
    except Exception as err:  # noqa: BLE001 - movement's own limits are reported, not ours
        pytest.skip(f"movement cannot read it: {type(err).__name__}: {str(err)[:120]}")
    theirs = theirs.isel(time=slice(0, ours.sizes["time"]))
    if path.suffix == ".slp" and theirs.sizes["individuals"] < ours.sizes["individual"]:
        # An untracked frame's instances: movement keeps the last one (and no score for
        # hand labels), kinefit every one as sleap-io does. The positions must agree.
        mine = ours["position"].isel(individual=-1).values
        np.testing.assert_allclose(mine, theirs["position"].isel(individuals=0).values)
        return
    assert_same_tracks(ours, theirs, individuals=False)
