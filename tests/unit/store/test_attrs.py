"""``store_attrs``: the root attributes of either store, empty when there is none."""

from __future__ import annotations

import numpy as np

from pipeline.store import write_tracks
from pipeline.store.attrs import store_attrs
from pipeline.tracks.schema import make_tracks_dataset


def test_a_tracks_stores_attrs_and_nothing_for_a_missing_or_foreign_folder(tmp_path):
    ds = make_tracks_dataset(
        np.zeros((4, 3, 2)), keypoints=["a", "b"], fps=10.0, source_software="test"
    )
    write_tracks(ds, tmp_path / "t.zarr", chunk_frames=2)
    attrs = store_attrs(tmp_path / "t.zarr")
    assert attrs["ds_type"] == "poses" and attrs["fps"] == 10.0
    assert store_attrs(tmp_path / "missing.zarr") == {}
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "zarr.json").write_text("not json")
    assert store_attrs(tmp_path / "plain") == {}
