import numpy as np
import pytest
import xarray as xr

from pipeline.tracks import TracksError
from pipeline.tracks.mapping import (
    UnmappedKeypointWarning,
    load_keypoint_map,
    map_keypoints,
    rename_keypoints,
)

JOINTS = ("root", "knee", "foot")


def test_match_by_name_with_missing_joints():
    mapping = map_keypoints(["foot", "root"], JOINTS)
    assert mapping.joint_keypoint == (1, -1, 0)
    assert mapping.missing_joints == ("knee",)
    assert mapping.unmapped_keypoints == ()
    values = np.array([[10.0, 20.0]])  # (1, keypoint)
    np.testing.assert_array_equal(mapping.gather(values, axis=1), [[20.0, np.nan, 10.0]])


def test_unmapped_keypoints_are_reported_once():
    with pytest.warns(UnmappedKeypointWarning, match=r"\['tail', 'ear'\]") as record:
        mapping = map_keypoints(["root", "tail", "ear"], JOINTS)
    assert len(record) == 1
    assert mapping.unmapped_keypoints == ("tail", "ear")


def test_yaml_map_renames(tmp_path):
    path = tmp_path / "map.yaml"
    path.write_text("keypoints:\n  Hip: root\n  Ankle: foot\n")
    mapping = map_keypoints(["Hip", "Ankle", "knee"], JOINTS, path)
    assert mapping.pairs() == [("Hip", "root"), ("knee", "knee"), ("Ankle", "foot")]
    assert load_keypoint_map(path) == {"Hip": "root", "Ankle": "foot"}


def test_bad_maps(tmp_path):
    with pytest.raises(TracksError, match=r"joints \['shin'\] are not in the body plan"):
        map_keypoints(["a"], JOINTS, {"a": "shin"})
    with pytest.raises(TracksError, match=r"keypoints \['zz'\] are not in the tracks"):
        map_keypoints(["a"], JOINTS, {"zz": "root"})
    with pytest.raises(TracksError, match=r"same joint\(s\) \['root'\]"):
        map_keypoints(["a", "root"], JOINTS, {"a": "root"})
    path = tmp_path / "map.yaml"
    path.write_text("- a\n- b\n")
    with pytest.raises(TracksError, match="map.yaml: a keypoint map is a YAML mapping"):
        load_keypoint_map(path)


def test_no_keypoint_maps_to_any_joint_lists_both_name_sets():
    with pytest.raises(TracksError, match=r"Track keypoints: \['x', 'y'\]\. Joints: \['root'"):
        map_keypoints(["x", "y"], JOINTS, source="s.zarr")


def test_rename_keypoints_records_the_map():
    ds = xr.Dataset(coords={"keypoint": np.array(["a", "b"], dtype=object)})
    out = rename_keypoints(ds, {"a": "root"})
    assert list(out["keypoint"].values) == ["root", "b"]
    assert out.attrs["keypoint_map"] == {"a": "root"}
    with pytest.raises(TracksError, match="duplicated keypoint names"):
        rename_keypoints(ds, {"a": "b"})
