"""The skeleton plot of a single-view 2D fit (real DeepLabCut tracks): the image plane."""

import numpy as np

from pipeline.inspect import open_fit, open_observed, plot_skeleton_frame
from tests.fixtures.image_plane_fit import image_fit  # noqa: F401 (fixture)


def test_a_2d_fit_is_drawn_on_its_image_plane_with_y_down(image_fit):  # noqa: F811
    fit = open_fit(image_fit)
    observed = open_observed(fit)
    frame = 100
    fig = plot_skeleton_frame(fit, observed, frame=frame)
    (ax,) = fig.axes  # one panel: the image, no 3D view or projections
    assert ax.name == "rectilinear" and ax.yaxis_inverted()  # image y points down
    assert ax.get_xlabel() == "x (px)" and ax.get_ylabel() == "y (px, down)"
    points = np.concatenate([c.get_offsets() for c in ax.collections if len(c.get_offsets())])
    seen = observed.isel(time=frame, individual=0).transpose("keypoint", "space").values[:, :2]
    seen = seen[np.isfinite(seen).all(axis=1)]
    assert len(seen) >= 3
    for point in seen:  # every observed keypoint is drawn where the tracks put it (pixels)
        assert np.min(np.abs(points - point).max(axis=1)) < 1e-4
    title = fig._suptitle.get_text()
    assert "Not observable from one view" in title and "root_position/z" in title


def test_the_fitted_skeleton_alone_needs_no_observed_keypoints(image_fit):  # noqa: F811
    fig = plot_skeleton_frame(open_fit(image_fit))
    (ax,) = fig.axes
    assert "fitted only" in fig._suptitle.get_text()
    assert ax.collections  # the bones and joints
