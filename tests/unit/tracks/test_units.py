"""Length units: canonical names, conversion factors against known answers, and the scale
check naming both the tracks' and the body plan's unit."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import xarray as xr

from pipeline.bodyplan import mannequin
from pipeline.tracks import TracksError
from pipeline.tracks.scale import ScaleWarning, check_scale
from pipeline.tracks.units import LENGTH_UNITS, canonical_unit, convert_length, unit_factor


@pytest.mark.parametrize(
    ("given", "name"),
    [
        (None, "unknown"),
        ("", "unknown"),
        ("pixels", "px"),
        ("PX", "px"),
        (b"mm", "mm"),
        ("millimetres", "mm"),
        (" Meters ", "m"),
        ("µm", "um"),
        ("inches", "in"),
        ("furlong", "furlong"),  # kept as the file wrote it, but not convertible
    ],
)
def test_canonical_unit(given, name):
    assert canonical_unit(given) == name


@pytest.mark.parametrize(
    ("a", "b", "factor"),
    [("mm", "m", 1e-3), ("m", "mm", 1e3), ("cm", "mm", 10.0), ("in", "mm", 25.4), ("ft", "in", 12)],
)
def test_factors_are_the_known_ones(a, b, factor):
    assert unit_factor(a, b) == pytest.approx(factor, rel=1e-12)


def test_every_written_unit_is_canonical():
    assert all(canonical_unit(u) == u for u in LENGTH_UNITS)


def test_convert_length_keeps_other_variables_and_float32():
    ds = xr.Dataset(
        {"position": (("time",), np.array([1.0, np.nan], np.float32)), "c": (("time",), [1, 2])},
        attrs={"unit": "cm", "fps": 30.0},
    )
    out = convert_length(ds, "mm")
    np.testing.assert_array_equal(out.position.values, np.array([10.0, np.nan], np.float32))
    assert out.position.dtype == np.float32 and out.attrs["fps"] == 30.0
    assert (out.attrs["unit"], ds.attrs["unit"]) == ("mm", "cm")
    assert convert_length(ds, "centimeters") is ds
    with pytest.raises(TracksError, match=r"s.zarr: field 'unit': cannot convert tracks in 'px'"):
        convert_length(ds.assign_attrs(unit="pixels"), "m", "s.zarr")


def test_scale_error_names_both_units_and_the_fix():
    plan = mannequin()  # metres (x-unit)
    assert plan.unit == "m"
    with pytest.raises(
        TracksError,
        match=r"\(mm\) and the body plan's probably differ \(the body "
        r"plan's: m;.*re-ingest the tracks with --to-unit m",
    ):
        check_scale(1000.0, plan, source="walk.zarr", unit="mm")
    unitless = dataclasses.replace(plan, unit=None)
    with pytest.raises(TracksError, match=r"plan's: unknown;.*say the unit of the body plan"):
        check_scale(1000.0, unitless, source="walk.zarr", unit="mm")
    with pytest.warns(ScaleWarning, match=r"same length unit \(tracks: m, body plan: m\)"):
        check_scale(3.0, plan, source="walk.zarr", unit="m")
