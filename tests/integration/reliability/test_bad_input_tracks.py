"""Bad tracks stores at the pipeline level: one error naming the store and the field.

Each case writes a broken tracks store with plain xarray/zarr (as another tool might,
bypassing kinefit's validation) into an output folder that already holds a complete fit,
then fits it onto that fit with ``force=True``: the fit raises the documented error type
(:class:`~pipeline.tracks.TracksError`, ``FileNotFoundError``) with one message naming
the store and the field, and not one byte of the folder changes.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from pipeline.fit import fit_session
from pipeline.store import write_tracks
from pipeline.tracks import TracksError
from tests.fixtures.reliability_helpers import assert_unchanged, snapshot

pytestmark = [  # unmapped keypoints; zarr's warning about the string dtype of a broken store
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning:zarr"),
]


@pytest.fixture(scope="module")
def folder(fly, fly_tracks, tmp_path_factory):
    from pipeline.solve import SolverConfig

    folder = tmp_path_factory.mktemp("archive")
    write_tracks(fly_tracks, folder / "t.zarr", chunk_frames=20)
    fit_session(folder / "t.zarr", fly, SolverConfig(), folder / "fit.zarr")
    return folder


def _raw(ds: xr.Dataset, path: Path) -> None:
    for name in ds.variables:
        ds[name].encoding = {}
    ds.to_zarr(path, mode="w", consolidated=False, zarr_format=3)


def _pos(ds, fn):
    ds = ds.copy(deep=True)
    values = ds["position"].values
    fn(values)
    return ds.assign(position=(ds["position"].dims, values))


def _set(index, value, var="position"):
    def change(ds):
        ds = ds.copy(deep=True)
        values = ds[var].values
        values[index] = value
        return ds.assign({var: (ds[var].dims, values)})

    return change


def _coord(name, values):
    return lambda ds: ds.assign_coords({name: values(ds)})


def _attrs(**attrs):
    def change(ds):
        ds = ds.copy()
        ds.attrs.update(attrs)
        return ds

    return change


def _names(n, names):
    return np.array(names + [f"kp{i}" for i in range(n - len(names))], dtype=object)


def _scale(factor):
    return lambda ds: ds.assign(position=ds["position"] * np.float32(factor))


def _all_nan_mapped(ds):
    """Only an unmapped keypoint is observed."""
    ds = _pos(ds, lambda v: v.__setitem__(np.s_[:], np.nan))
    extra = ds.isel(keypoint=[0]).assign_coords(keypoint=np.array(["antenna"], dtype=object))
    extra["position"][:] = 1.0
    return xr.concat([ds, extra], dim="keypoint")


T = "time"
# (id, transform of the good dataset, error type, message regex after the store path)
CASES = [
    (
        "missing-individual-dim",
        lambda ds: ds.isel(individual=0, drop=True),
        TracksError,
        r"missing dims \['individual'\]",
    ),
    (
        "extra-dim",
        lambda ds: ds.expand_dims(camera=2),
        TracksError,
        r"position: expected dims \('time', 'space', 'keypoint', 'individual'\)",
    ),
    (
        "four-space-components",
        lambda ds: ds.isel(space=[0, 1, 2, 2]).assign_coords(space=np.array(list("xyzw"), object)),
        TracksError,
        r"space: expected 2 or 3 components",
    ),
    (
        "space-names",
        _coord("space", lambda ds: np.array(list("abc"), object)),
        TracksError,
        r"space: expected names \['x', 'y', 'z'\]",
    ),
    (
        "no-position",
        lambda ds: ds.drop_vars("position"),
        TracksError,
        r"missing variable 'position'",
    ),
    (
        "position-strings",
        lambda ds: ds.assign(position=ds["position"].astype(str)),
        TracksError,
        r"position: expected real numbers",
    ),
    (
        "confidence-dims",
        lambda ds: ds.assign(confidence=ds["position"]),
        TracksError,
        r"confidence: expected dims \('time', 'keypoint', 'individual'\)",
    ),
    (
        "position-plus-inf",
        _set((7, 0, 3, 0), np.inf),
        TracksError,
        r"position.*infinite.*frame 7.*keypoint",
    ),
    (
        "position-minus-inf",
        _set((31, 2, 0, 0), -np.inf),
        TracksError,
        r"position.*infinite.*frame 31",
    ),
    (
        "confidence-inf",
        _set((3, 1, 0), np.inf, "confidence"),
        TracksError,
        r"confidence.*infinite.*frame 3",
    ),
    ("all-nan-session", _set(np.s_[:], np.nan), TracksError, r"all-NaN session"),
    ("only-unmapped-observed", _all_nan_mapped, TracksError, r"all-NaN session"),
    (
        "duplicate-keypoints",
        _coord("keypoint", lambda ds: _names(ds.sizes["keypoint"], ["thorax", "thorax"])),
        TracksError,
        r"keypoint: duplicated names \['thorax'\]",
    ),
    (
        "duplicate-individuals",
        lambda ds: xr.concat([ds, ds], "individual"),
        TracksError,
        r"individual: duplicated names",
    ),
    (
        "non-monotonic-time",
        _coord(T, lambda ds: ds[T].values[[0, 2, 1, *range(3, 60)]]),
        TracksError,
        r"time: not monotonic increasing \(first decrease at index 2\)",
    ),
    (
        "duplicated-time",
        _coord(T, lambda ds: ds[T].values[[0, 1, 1, *range(3, 60)]]),
        TracksError,
        r"time: duplicated time stamps \(first at index 2\)",
    ),
    (
        "nan-time",
        _coord(T, lambda ds: np.where(np.arange(60) == 5, np.nan, ds[T].values)),
        TracksError,
        r"time: contains NaN or infinite values",
    ),
    (
        "no-frames",
        lambda ds: ds.isel(time=slice(0, 0)),
        TracksError,
        r"time: the session has no frames",
    ),
    ("fps-negative", _attrs(fps=-30.0), TracksError, r"attrs.fps: expected a positive number"),
    ("fps-text", _attrs(fps="thirty"), TracksError, r"attrs.fps: expected a positive number"),
    (
        "ds-type-bboxes",
        _attrs(ds_type="bboxes"),
        TracksError,
        r"attrs.ds_type: expected 'poses', got 'bboxes'",
    ),
    ("up-axis", _attrs(up_axis="w"), TracksError, r"attrs.up_axis: expected one of x, y, z"),
    (
        "metres-vs-millimetres",
        _scale(1000.0),
        TracksError,
        r"field 'position': the tracked keypoints are 1.0\de\+03x larger than the same joints.*"
        r"length unit \(body\) and the body plan's probably differ",
    ),
    (
        "millimetres-vs-metres",
        _scale(0.001),
        TracksError,
        r"field 'position': the tracked keypoints are 9\d\dx smaller",
    ),
]


@pytest.mark.parametrize(
    ("make", "error", "match"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_tracks_store(folder, fly, fly_tracks, solver, request, make, error, match):
    bad = folder / f"bad-{request.node.callspec.id}.zarr"
    if not bad.exists():
        _raw(make(fly_tracks), bad)
    before = snapshot(folder)
    with pytest.raises(error, match=r"(?s)" + re.escape(str(bad)) + r".*" + match) as info:
        fit_session(bad, fly, solver, folder / "fit.zarr", force=True)
    assert str(info.value).count(str(bad)) >= 1
    assert_unchanged(before, folder)


def _corrupt_chunk(path: Path) -> None:
    chunk = next(p for p in sorted((path / "position" / "c").rglob("*")) if p.is_file())
    chunk.write_bytes(b"\x00garbage")


def _truncate_metadata(path: Path) -> None:
    meta = path / "zarr.json"
    meta.write_text(meta.read_text()[:40])


STORE_CASES = [
    (
        "not-a-store",
        lambda p: (p.mkdir(), (p / "notes.txt").write_text("hi")),
        TracksError,
        r"not a readable zarr store",
    ),
    ("a-plain-file", lambda p: p.write_text("x"), TracksError, r"not a readable zarr store"),
    ("missing", lambda p: None, FileNotFoundError, r"no such tracks store"),
    ("truncated-metadata", _truncate_metadata, TracksError, r"not a readable zarr store"),
    ("corrupt-chunk", _corrupt_chunk, TracksError, r"position.*(corrupt|decode|unreadable)"),
]


@pytest.mark.parametrize(
    ("damage", "error", "match"), [c[1:] for c in STORE_CASES], ids=[c[0] for c in STORE_CASES]
)
def test_broken_store(folder, fly, fly_tracks, solver, request, damage, error, match):
    bad = folder / f"broken-{request.node.callspec.id}.zarr"
    if not bad.exists() and request.node.callspec.id != "missing":
        if request.node.callspec.id in ("truncated-metadata", "corrupt-chunk"):
            shutil.copytree(folder / "t.zarr", bad)
        damage(bad)
    before = snapshot(folder)
    with pytest.raises(error, match=r"(?s)" + re.escape(str(bad)) + r".*" + match):
        fit_session(bad, fly, solver, folder / "fit.zarr", force=True)
    assert_unchanged(before, folder)


MAP_CASES = [
    ("unknown-keypoint", "Thorx: thorax\n", r"keypoints \['Thorx'\] are not in the tracks"),
    ("unknown-joint", "thorax: thorx\n", r"joints \['thorx'\] are not in the body plan"),
    ("two-to-one", "thorax: lf_claw\nrf_claw: lf_claw\n", r"several track keypoints map"),
    ("not-a-mapping", "- thorax\n- lf_claw\n", r"a keypoint map is a YAML mapping"),
    ("bad-yaml", "thorax: [unclosed\n", r"cannot read the keypoint map"),
]


@pytest.mark.parametrize("text, match", [c[1:] for c in MAP_CASES], ids=[c[0] for c in MAP_CASES])
def test_bad_keypoint_map(folder, fly, solver, request, text, match):
    keymap = folder / f"map-{request.node.callspec.id}.yaml"
    keymap.write_text(text)
    before = snapshot(folder)
    with pytest.raises(TracksError, match=r"(?s)" + re.escape(str(keymap)) + r".*" + match):
        fit_session(
            folder / "t.zarr", fly, solver, folder / "fit.zarr", force=True, keypoint_map=keymap
        )
    assert_unchanged(before, folder)
