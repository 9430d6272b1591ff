"""A single-view 2D fit's observed keypoints as points of its image plane, checked on a real
DeepLabCut file against pandas' own reader of it."""

import numpy as np
import pandas as pd

from pipeline.inspect import open_fit, open_observed
from pipeline.inspect.data.observation import (
    observation_kind,
    on_image_plane,
    unobservable,
    unobservable_note,
)
from tests.fixtures.image_plane_fit import DLC_H5, FRAMES, image_fit  # noqa: F401 (fixture)


def test_observed_pixels_become_points_of_the_image_plane(image_fit):  # noqa: F811
    fit = open_fit(image_fit)
    observed = open_observed(fit)
    assert observation_kind(fit) == "image" and on_image_plane(fit)
    assert list(observed["space"].values) == ["x", "y", "z"]
    raw = pd.read_hdf(DLC_H5)  # DeepLabCut's pandas HDF5, read by pandas itself
    scorer = raw.columns.get_level_values(0)[0]
    for name in ("snout", "leftear", "rightear", "tailbase"):
        want = raw[scorer][name][["x", "y"]].to_numpy()[:FRAMES]
        got = observed.sel(keypoint=name).isel(individual=0).transpose("time", "space").values
        seen = np.isfinite(got[:, 0])
        assert seen.sum() > FRAMES // 2  # most frames are confident enough to be kept
        np.testing.assert_allclose(got[seen, :2], want[seen], rtol=1e-6)
        assert np.all(got[seen, 2] == 0.0)  # on the plane
        assert np.all(np.isnan(got[~seen]))  # a dropped keypoint stays missing


def test_the_coordinates_one_view_cannot_see_are_named(image_fit):  # noqa: F811
    fit = open_fit(image_fit)
    names = unobservable(fit)
    # depth and the two tilts out of the image: a camera looking down the z axis sees neither
    assert {"root_position/z", "root_rotation/x", "root_rotation/y"} <= set(names)
    note = unobservable_note(fit)
    assert note.startswith("Not observable from one view: ")
    assert all(name in note for name in names)
