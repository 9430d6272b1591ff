"""Exporters under the format contract: sniffing by record, Kimodo through the same call."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.export import export
from pipeline.export.common import read_record
from pipeline.export.exporter_registry import REGISTRY
from pipeline.export.kimodo import (
    ExportConfig,
    FrameSpec,
    KimodoError,
    export_kimodo,
    kimodo_body_plan,
    load_kimodo_skeleton,
)
from pipeline.store.fit import open_fit
from tests.fixtures.kimodo_motion import fit_store, upright_tracks
from tests.fixtures.shared_data import KIMODO

SKELETONS = KIMODO / "skeletons.json"


@pytest.fixture(scope="module")
def smplx_fit(tmp_path_factory):
    folder = tmp_path_factory.mktemp("smplx")
    plan = kimodo_body_plan(load_kimodo_skeleton(SKELETONS, "smplx22"))
    tracks = upright_tracks(plan, 12, 30.0, np.random.default_rng(7), up_axis="y")
    return fit_store(plan, tracks, folder)


def test_an_exporters_sniff_knows_its_own_files_by_their_record(fits_root, tmp_path):
    out = tmp_path / "walk.bvh"
    (written,) = export("bvh", fits_root / "walk.zarr", out, individual="individual_0").files
    formats = REGISTRY.formats()
    assert formats["bvh"].sniff(written)
    assert not formats["csv"].sniff(written) and not formats["kimodo"].sniff(written)
    copy = tmp_path / "copy.bvh"
    copy.write_bytes(written.read_bytes())
    assert not formats["bvh"].sniff(copy)  # same content, no record: not known to be ours
    written.unlink()
    assert not formats["bvh"].sniff(written)  # a record without its file


def test_kimodo_writes_the_record_and_runs_through_the_generic_export(smplx_fit, tmp_path):
    out, meta = tmp_path / "c.json", tmp_path / "c.meta.json"
    config = ExportConfig(fullbody=FrameSpec((0, 11)))
    report = export_kimodo(smplx_fit, SKELETONS, "smplx22", out, config, meta=meta)
    record = read_record(out)
    assert record["exporter"] == "kimodo" and record["files"] == [str(out), str(meta)]
    assert record["fit_fingerprint"] == open_fit(smplx_fit).attrs["fingerprint"]
    assert record["options"]["skeleton"] == "smplx22"
    assert record["options"]["config"]["fullbody"]["frames"] == [0, 11]
    assert REGISTRY.get("kimodo").sniff(out)
    same = dict(skeleton_file=SKELETONS, skeleton="smplx22", config=config, meta=meta)
    again = export("kimodo", smplx_fit, out, skip_current=True, **same)
    assert again.skipped and again.fingerprint == record["fingerprint"]  # one fingerprint
    before = out.read_text(), meta.read_text()
    redone = export("kimodo", smplx_fit, out, overwrite=True, **same)
    assert not redone.skipped and redone.files == (out, meta)
    assert (
        (out.read_text(), meta.read_text())
        == before
        == (
            report.out.read_text(),
            report.meta.read_text(),
        )
    )
    with pytest.raises(FileExistsError, match=r"c\.json, .*c\.meta\.json: already exists"):
        export("kimodo", smplx_fit, out, **same)
    with pytest.raises(KimodoError, match=r"fit\.zarr: the kimodo export needs skeleton_file="):
        export("kimodo", smplx_fit, tmp_path / "d.json")
    with pytest.raises(KimodoError, match=r"fit\.zarr: no individual 'mouse'"):
        export(
            "kimodo",
            smplx_fit,
            tmp_path / "d.json",
            **{**same, "config": ExportConfig(individual="mouse")},
        )
    assert not (tmp_path / "d.json").exists()
