"""`kinefit export {csv,bvh,trc,mot,nwb,qpos,movement}` through the real CLI app."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from flows.cli import app


@pytest.mark.parametrize(
    ("command", "written"),
    [
        (["csv"], ["walk.csv"]),
        (["csv", "--angles", "rad", "--individual", "individual_1"], ["walk.csv"]),
        (["bvh", "--rotation-order", "ZYX"], ["walk.individual_0.bvh", "walk.individual_1.bvh"]),
        (["trc", "--keypoints", "fitted"], ["walk.individual_0.trc", "walk.individual_1.trc"]),
        (["nwb", "--individual", "individual_0"], ["walk.nwb"]),
        (["movement", "--dims", "plural"], ["walk.nc"]),
    ],
)
def test_export_commands_write_beside_the_store(command, written, archive_copy):
    fits = archive_copy / "fits"
    result = CliRunner().invoke(
        app, ["export", *command[:1], str(fits / "walk.zarr"), *command[1:]]
    )
    assert result.exit_code == 0, result.output
    for name in written:
        assert (fits / name).is_file() and f"wrote {fits / name}" in " ".join(result.output.split())
    again = CliRunner().invoke(app, ["export", *command[:1], str(fits / "walk.zarr"), *command[1:]])
    assert again.exit_code == 1 and "already exists; pass --overwrite to replace it" in again.output


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (["mot"], "mot export: the fitted plan was not imported from an OpenSim model"),
        (["qpos"], "qpos export: the fitted plan has no engine mapping"),
        (["bvh", "--rotation-order", "QQQ"], "rotation order 'QQQ'"),
        (["csv", "--angles", "grad"], "angles 'grad'; valid: deg, rad, none"),
        (["nwb", "--session-file", "missing.nwb"], "session file missing.nwb does not exist"),
    ],
)
def test_bad_export_requests_exit_1_with_one_message(command, message, fits_root, tmp_path):
    out = tmp_path / f"out.{'npz' if command[0] == 'qpos' else command[0]}"  # its suffix
    args = ["export", command[0], str(fits_root / "walk.zarr"), "-o", str(out), *command[1:]]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1
    assert message in " ".join(result.output.split())
    assert not list(tmp_path.iterdir())


def test_the_export_group_lists_every_exporter():
    result = CliRunner().invoke(app, ["export", "--help"])
    for name in ("csv", "bvh", "trc", "mot", "nwb", "qpos", "movement", "kimodo"):
        assert f" {name} " in result.output
