"""The exporters' table: names, options, atomic files, overwrite refusal, fingerprints."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from movement.kinematics import compute_velocity

from pipeline.config.models import OutputsConfig
from pipeline.errors import ExportError
from pipeline.export import AUTOMATIC_EXPORTS, EXPORT_NAMES, export
from pipeline.export.common import read_record, sidecar
from pipeline.export.exporter_registry import default_output, exporter_options, get_exporter
from pipeline.store.fit import open_fit


def test_the_table_is_what_the_config_accepts():
    assert EXPORT_NAMES == ("csv", "bvh", "trc", "mot", "nwb", "qpos", "movement", "kimodo")
    assert "kimodo" not in AUTOMATIC_EXPORTS
    assert OutputsConfig(exports=list(AUTOMATIC_EXPORTS)).exports == list(AUTOMATIC_EXPORTS)
    with pytest.raises(ValueError, match=r"Input should be 'csv', 'bvh', 'trc', 'mot'"):
        OutputsConfig(exports=["xlsx"])
    assert exporter_options(get_exporter("bvh")) == ("individual", "rotation_order")


def test_unknown_format_and_option(fits_root, tmp_path):
    with pytest.raises(ExportError, match=r"unknown export format 'fbx'; valid formats: csv, bvh"):
        export("fbx", fits_root / "walk.zarr")
    with pytest.raises(ExportError, match=r"unknown option\(s\) fps; valid options: individual"):
        export("bvh", fits_root / "walk.zarr", tmp_path / "w.bvh", fps=30)


def test_default_output_is_beside_the_store(fits_root):
    assert default_output(fits_root / "walk.zarr", "movement") == fits_root / "walk.nc"
    assert default_output(fits_root / "walk.zarr", "qpos") == fits_root / "walk.npz"


def test_refuses_to_overwrite_then_replaces_atomically(fits_root, tmp_path):
    out = tmp_path / "walk.csv"
    out.write_text("mine\n")
    with pytest.raises(FileExistsError, match=r"walk.csv: already exists; pass overwrite"):
        export("csv", fits_root / "walk.zarr", out)
    assert out.read_text() == "mine\n" and not sidecar(out).exists()
    export("csv", fits_root / "walk.zarr", out, overwrite=True)
    assert out.read_text().startswith("time [s],frame,individual,root_x [")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".walk.csv.kinefit-export.json",
        "walk.csv",
    ]


def test_fingerprint_record_makes_reexports_skip_until_the_fit_changes(archive_copy, tmp_path):
    store = archive_copy / "fits" / "walk.zarr"
    out = tmp_path / "walk.bvh"
    first = export("bvh", store, out, skip_current=True)
    assert not first.skipped and len(first.files) == 2
    record = read_record(out)
    assert record["fit_fingerprint"] == open_fit(store).attrs["fingerprint"]
    assert record["files"] == [str(f) for f in first.files]
    again = export("bvh", store, out, skip_current=True)
    assert again.skipped and again.files == first.files
    other = export("bvh", store, out, skip_current=True, rotation_order="XYZ")
    assert not other.skipped  # other settings: stale
    first.files[0].unlink()
    assert not export("bvh", store, out, skip_current=True, rotation_order="XYZ").skipped
    # a refit (new fingerprint) makes the export stale
    attrs = json.loads((store / "zarr.json").read_text())
    attrs["attributes"]["fingerprint"] = "0" * 64
    (store / "zarr.json").write_text(json.dumps(attrs))
    assert not export("bvh", store, out, skip_current=True, rotation_order="XYZ").skipped


def test_csv_has_units_and_named_angles(walk, fits_root, tmp_path):
    table = pd.read_csv(export("csv", fits_root / "walk.zarr", tmp_path / "w.csv").files[0])
    assert len(table) == 2 * walk.sizes["time"]
    unit = walk.attrs["unit"]
    assert {"time [s]", f"root_x [{unit}]", "knee_l/0 [rad]", f"rms_error [{unit}]"} <= set(table)
    first = table[table["individual"] == "individual_0"]
    np.testing.assert_allclose(
        first["knee_l/flexion [deg]"],
        np.degrees(walk["dof_value"].sel(individual="individual_0", dof="knee_l/0").values),
        rtol=1e-8,
    )
    assert "hip_r/internal_rotation [deg]" in table
    bare = pd.read_csv(
        export("csv", fits_root / "walk.zarr", tmp_path / "b.csv", angles="none").files[0]
    )
    assert not any("flexion" in c for c in bare)


def test_movement_dataset_opens_and_matches_the_fit(walk, fits_root, tmp_path):
    path = export("movement", fits_root / "walk.zarr", tmp_path / "w.nc").files[0]
    ds = xr.open_dataset(path)
    assert ds["position"].dims == ("time", "space", "keypoint", "individual")
    assert ds.attrs["ds_type"] == "poses" and ds.attrs["fps"] == walk.attrs["fps"]
    np.testing.assert_array_equal(ds["position"].values, walk["fitted_position"].values)
    assert np.isnan(ds["confidence"]).all()


def test_movement_plural_dims_work_with_movements_tools(walk, fits_root, tmp_path):
    path = export("movement", fits_root / "walk.zarr", tmp_path / "p.nc", dims="plural").files[0]
    ds = xr.open_dataset(path)
    assert set(ds["position"].dims) == {"time", "space", "keypoints", "individuals"}
    velocity = compute_velocity(ds["position"])
    dt = float(np.diff(walk["time"].values[:2])[0])
    step = (walk["fitted_position"].isel(time=1) - walk["fitted_position"].isel(time=0)) / dt
    np.testing.assert_allclose(velocity.isel(time=0).values, step.values, rtol=1e-5, atol=1e-6)
