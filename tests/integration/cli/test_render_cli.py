"""`kinefit render`: a 3D animation without --video, an overlay with it, one-line errors."""

import av
from typer.testing import CliRunner

from flows.cli import app


def run(*args):
    return CliRunner().invoke(app, ["render", *map(str, args)])


def test_render_animation_and_overlay_of_a_fit(fits_root, tmp_path):
    fit = fits_root / "walk.zarr"
    result = run(fit, "-o", tmp_path / "walk.mp4", "--step", 4, "--width", 320, "--height", 240)
    assert result.exit_code == 0, result.output
    assert "wrote 3D animation" in result.output and "50 frames" in result.output
    with av.open(str(tmp_path / "walk.mp4")) as container:
        stream = container.streams.video[0]
        assert (stream.width, stream.height, stream.frames) == (320, 240, 50)
    # the animation is a video of the session's rate and length: overlay onto it as "image
    # coordinates" is refused for a fit in metres without a camera, in one line
    result = run(fit, "--video", tmp_path / "walk.mp4", "-o", tmp_path / "o.mp4")
    assert result.exit_code == 1
    assert "not image pixels; pass the camera" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_render_errors_are_one_line(fits_root, tmp_path):
    fit = fits_root / "walk.zarr"
    calib = tmp_path / "c.toml"
    calib.write_text("[cam_0]\nname = 'left'\n")
    result = run(fit, "--camera", "left", "-o", tmp_path / "x.mp4")
    assert result.exit_code == 1 and "--camera and --calibration need --video" in result.output
    result = run(tmp_path / "none.zarr", "-o", tmp_path / "x.mp4")
    assert result.exit_code == 1 and "none.zarr" in result.output
    assert not (tmp_path / "x.mp4").exists()
