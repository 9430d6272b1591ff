"""The HTML report and the viewer of a single-view 2D fit (real DeepLabCut tracks)."""

import pytest

from pipeline.inspect import open_fit, open_observed, write_session_report
from pipeline.inspect.viewer.figure import viewer_spec
from tests.fixtures.image_plane_fit import image_fit  # noqa: F401 (fixture)


def test_the_report_of_a_2d_fit_says_what_one_view_cannot_see(image_fit, tmp_path):  # noqa: F811
    page = write_session_report(image_fit, tmp_path / "report.html").read_text()
    assert "2D keypoints of one view (fit on the image plane)" in page
    assert "Not observable from one view: root_position/z" in page
    assert "on the image plane (px)" in page  # the skeleton plot's caption
    assert page.count("data:image/png;base64,") >= 4  # the figures were drawn


def test_the_viewer_looks_at_the_image_plane_straight_on(image_fit):  # noqa: F811
    fit = open_fit(image_fit)
    spec = viewer_spec(fit, open_observed(fit))
    scene = spec["layout"]["scene"]
    assert scene["camera"]["projection"] == {"type": "orthographic"}
    assert scene["camera"]["up"] == {"x": 0.0, "y": -1.0, "z": 0.0}  # image y down
    assert scene["camera"]["eye"]["z"] < 0 and scene["zaxis"]["visible"] is False
    subtitle = spec["layout"]["title"]["subtitle"]["text"]
    assert "Not observable from one view: root_position/z" in subtitle
    observed = [t for t in spec["data"] if t.get("meta", {}).get("kinefit") == "observed"]
    assert observed  # the tracked keypoints are drawn (they crashed the viewer's data before)


def test_a_joint_of_slides_only_shows_the_first_angle_panel(image_fit):  # noqa: F811
    fit = open_fit(image_fit)  # mouse_topdown: the spine slides, the head yaws
    with pytest.warns(UserWarning, match="joint 'spine' has no angles"):
        spec = viewer_spec(fit, joint="spine")
    shown = {
        t["meta"]["angle"]
        for t in spec["data"]
        if t.get("meta", {}).get("kinefit") == "angle" and t["visible"]
    }
    assert shown == {"head/0"}
