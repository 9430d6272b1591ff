"""BVH files written by hand; world positions computed by hand.

The skeleton (lengths in cm, rest pose)::

        spine_end (0, 5, 4)      spine's End Site, offset (0, 0, 4)
        |
        spine     (0, 5, 0)
        |
        hip       (0, 0, 0)      ROOT, 6 channels
        |
        knee      (0, -10, 0)    channels Z X Y
        |
        knee_end  (0, -20, 0)    knee's End Site, offset (0, -10, 0)

Frame 0: rest pose.
Frame 1: root moved to (1, 2, 3), knee bent 90 degrees about Z: the shin (0, -10, 0) turns
  into (10, 0, 0), so knee_end = knee + (10, 0, 0) = (11, -8, 3).
Frame 2: root turned 90 degrees about Z, spine Xrotation 90 then Yrotation 90 (channels
  X Y Z: R = Rx @ Ry). Ry(90) sends (0, 0, 4) to (4, 0, 0), Rx(90) keeps it; the root turn
  makes it (0, 4, 0). knee = Rz(90) (0, -10, 0) = (10, 0, 0), knee_end = (20, 0, 0),
  spine = Rz(90) (0, 5, 0) = (-5, 0, 0), spine_end = (-5, 4, 0). (The other order,
  Ry @ Rx, would give (0, -4, 0) before the root turn: the test tells them apart.)
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from pipeline.tracks import TracksError, read_tracks
from pipeline.tracks.readers import bvh

HIERARCHY = """HIERARCHY
ROOT hip
{
  OFFSET 0.0 0.0 0.0
  CHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation Yrotation
  JOINT knee
  {
    OFFSET 0 -10 0
    CHANNELS 3 Zrotation Xrotation Yrotation
    End Site
    {
      OFFSET 0 -10 0
    }
  }
  JOINT spine
  {
    OFFSET 0 5 0
    CHANNELS 3 Xrotation Yrotation Zrotation
    End Site
    {
      OFFSET 0 0 4
    }
  }
}
"""
FRAMES = [
    "0 0 0 0 0 0 0 0 0 0 0 0",
    "1 2 3 0 0 0 90 0 0 0 0 0",
    "0 0 0 90 0 0 0 0 0 90 90 0",
]
KEYPOINTS = ["hip", "knee", "knee_end", "spine", "spine_end"]
EXPECTED = np.array(
    [  # (frame, keypoint, xyz), by hand (see the module docstring)
        [[0, 0, 0], [0, -10, 0], [0, -20, 0], [0, 5, 0], [0, 5, 4]],
        [[1, 2, 3], [1, -8, 3], [11, -8, 3], [1, 7, 3], [1, 7, 7]],
        [[0, 0, 0], [10, 0, 0], [20, 0, 0], [-5, 0, 0], [-5, 4, 0]],
    ],
    dtype=float,
)


def bvh_text(frames=FRAMES, n_frames=None, frame_time="0.04") -> str:
    n = len(frames) if n_frames is None else n_frames
    return HIERARCHY + f"MOTION\nFrames: {n}\nFrame Time: {frame_time}\n" + "\n".join(frames) + "\n"


def write(tmp_path: Path, text: str, name="bend.bvh") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_world_positions_match_the_hand_computed_pose(tmp_path: Path) -> None:
    path = write(tmp_path, bvh_text())
    assert bvh.sniff(path)
    ds = read_tracks(path, unit="cm")
    assert list(ds.keypoint.values) == KEYPOINTS
    got = ds.position.values[..., 0].transpose(0, 2, 1)  # (frame, keypoint, xyz)
    np.testing.assert_allclose(got, EXPECTED, atol=1e-5)
    assert ds.attrs["fps"] == pytest.approx(25.0)
    np.testing.assert_allclose(ds.time.values, [0, 0.04, 0.08])
    assert (ds.attrs["unit"], ds.attrs["up_axis"]) == ("cm", None)
    assert np.isnan(ds.confidence.values).all()


def test_root_offset_adds_to_the_position_channels_or_is_replaced(tmp_path: Path) -> None:
    path = write(tmp_path, bvh_text().replace("OFFSET 0.0 0.0 0.0", "OFFSET 0.0 1.0 0.0"))
    added = bvh.read(path).position.sel(keypoint="hip").values[1, :, 0]
    np.testing.assert_allclose(added, [1, 3, 3])  # channels (1, 2, 3) + offset (0, 1, 0)
    replaced = bvh.read(path, translation="replace").position.sel(keypoint="hip").values
    np.testing.assert_allclose(replaced[1, :, 0], [1, 2, 3])
    with pytest.raises(TracksError, match=r"translation': 'absolute'; valid choices: 'add'"):
        bvh.read(path, translation="absolute")


def test_unit_is_unknown_unless_given(tmp_path: Path) -> None:
    ds = read_tracks(write(tmp_path, bvh_text()), up_axis="y")
    assert (ds.attrs["unit"], ds.attrs["up_axis"]) == ("unknown", "y")


def test_tabs_and_crlf_line_ends_are_fine(tmp_path: Path) -> None:
    text = bvh_text().replace("  ", "\t").replace("\n", "\r\n")
    ds = bvh.read(write(tmp_path, text))
    np.testing.assert_allclose(ds.position.values[..., 0].transpose(0, 2, 1), EXPECTED, atol=1e-5)


def test_missing_frame_line_fails(tmp_path: Path) -> None:
    path = write(tmp_path, bvh_text(frames=FRAMES[:2], n_frames=3), "short.bvh")
    with pytest.raises(TracksError, match=r"short\.bvh: 'Frames: 3' but 2 frame lines"):
        bvh.read(path)


def test_truncated_file_fails(tmp_path: Path) -> None:
    text = bvh_text()
    path = write(tmp_path, text[: len(text) - 8], "cut.bvh")
    with pytest.raises(
        TracksError, match=r"cut\.bvh: frame 2 has 9 values, the HIERARCHY declares 12"
    ):
        bvh.read(path)
    path = write(tmp_path, HIERARCHY[:200], "cut_hierarchy.bvh")
    with pytest.raises(TracksError, match=r"cut_hierarchy\.bvh: no MOTION section"):
        bvh.read(path)


def test_wrong_value_count_fails(tmp_path: Path) -> None:
    frames = [FRAMES[0], FRAMES[1] + " 0", FRAMES[2]]
    path = write(tmp_path, bvh_text(frames=frames), "long.bvh")
    with pytest.raises(TracksError, match=r"frame 1 has 13 values, the HIERARCHY declares 12"):
        bvh.read(path)


def test_missing_hierarchy_keyword_and_bad_channel_fail(tmp_path: Path) -> None:
    path = write(tmp_path, bvh_text().replace("HIERARCHY\n", ""), "headless.bvh")
    assert not bvh.sniff(path)
    with pytest.raises(TracksError, match=r"expected 'HIERARCHY' in the HIERARCHY, got 'ROOT'"):
        bvh.read(path)
    path = write(tmp_path, bvh_text().replace("3 Zrotation", "3 Wrotation"), "chan.bvh")
    with pytest.raises(TracksError, match=r"joint 'knee': channels \['Wrotation'.*valid: X"):
        bvh.read(path)


def test_unknown_keypoint_in_the_map_fails(tmp_path: Path) -> None:
    path = write(tmp_path, bvh_text())
    renamed = read_tracks(path, format="bvh", keypoint_map={"knee_end": "ankle"})
    assert list(renamed.keypoint.values) == ["hip", "knee", "ankle", "spine", "spine_end"]
    with pytest.raises(TracksError, match=r"\['ankle'\] that the file does not have"):
        read_tracks(path, format="bvh", keypoint_map={"ankle": "foot"})


def test_zero_frame_time_needs_fps(tmp_path: Path) -> None:
    path = write(tmp_path, bvh_text(frame_time="0"), "zero.bvh")
    with pytest.raises(TracksError, match=r"zero\.bvh: the frame rate is unknown"):
        bvh.read(path)
    assert bvh.read(path, fps=60).attrs["fps"] == 60.0


@pytest.mark.parametrize(
    ("printed", "fps"),
    [("0.008333", 120.0), ("0.0333333", 30.0), ("0.04", 25.0), ("0.01", 100.0), ("0.033367", None)],
)
def test_printed_frame_times_of_whole_rates_round(printed: str, fps: float | None) -> None:
    rate = bvh.frame_rate(float(printed), printed)
    assert rate == (fps if fps is not None else pytest.approx(1 / 0.033367))


def test_a_rounded_frame_time_does_not_conflict_with_the_same_fps(tmp_path: Path) -> None:
    path = write(tmp_path, bvh_text(frame_time="0.008333"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "the file records 120.005 fps" warning
        ds = read_tracks(path, fps=120)
    assert ds.attrs["fps"] == 120.0 and ds.attrs["frame_time"] == 0.008333
