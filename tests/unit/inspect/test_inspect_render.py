"""Video overlays and 3D animations: drawn joints land on the camera's true projections.

The source video is made here: a clean synthetic mannequin session (known motion) seen by a
known camera with lens distortion, its noise-free keypoints drawn as white dots. The fit
of that session is drawn onto the video through the same camera (read back from a
calibration file), and the joints it drew are compared with OpenCV's projection of the
true keypoints (``cv2.projectPoints``, the outside reference).
"""

from fractions import Fraction

import av
import cv2
import numpy as np
import pytest
import xarray as xr
from PIL import Image, ImageDraw

from pipeline.bodyplan import mannequin
from pipeline.cameras import Camera, write_calibration
from pipeline.errors import InspectError
from pipeline.fit import fit_session
from pipeline.inspect import render_animation, render_overlay
from pipeline.solve import SolverConfig
from pipeline.store import open_fit, write_tracks
from pipeline.synth import SynthConfig, synthesize

FPS = 30
N_FRAMES = 40
SIZE = (640, 480)
RADTAN = (-0.12, 0.03, 0.0008, -0.0005, 0.0)


def look_at(center, target, up=(0.0, 1.0, 0.0)):
    center, target, up = (np.asarray(v, dtype=float) for v in (center, target, up))
    z = (target - center) / np.linalg.norm(target - center)
    x = np.cross(z, up)
    x /= np.linalg.norm(x)
    rot = np.stack([x, np.cross(z, x), z])
    return rot, -rot @ center


def opencv_pixels(camera: Camera, points: np.ndarray) -> np.ndarray:
    rvec, _ = cv2.Rodrigues(np.asarray(camera.rotation))
    uv, _ = cv2.projectPoints(
        points.reshape(-1, 1, 3).astype(float),
        rvec,
        np.asarray(camera.translation),
        camera.matrix,
        np.asarray(camera.coefficients),
    )
    return uv.reshape(points.shape[:-1] + (2,))


def write_video(path, frames: list[Image.Image], fps=FPS):
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=Fraction(fps))
        stream.width, stream.height = frames[0].size
        stream.pix_fmt = "yuv420p"
        for image in frames:
            out.mux(stream.encode(av.VideoFrame.from_image(image)))
        out.mux(stream.encode(None))


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    """A fitted clean session, its truth, a camera, its calibration file and its video."""
    root = tmp_path_factory.mktemp("render")
    plan = mannequin()
    config = SynthConfig(n_frames=N_FRAMES, fps=FPS, unit="m", up_axis="y", root_travel=0.2)
    session = synthesize(plan, config, np.random.default_rng(5), session="filmed")
    tracks = write_tracks(session.tracks, root / "tracks.zarr")
    fit = open_fit(fit_session(tracks, plan, SolverConfig(lanes=8), root / "fit.zarr").out)
    rot, t = look_at((0.6, 0.3, 4.0), (0.0, 0.0, 0.0))
    camera = Camera(
        name="cam0",
        size=SIZE,
        fx=620.0,
        fy=618.0,
        cx=322.0,
        cy=238.0,
        distortion="radtan",
        coefficients=RADTAN,
        rotation=rot,
        translation=t,
        unit="m",
    )
    calibration = root / "calibration.toml"
    write_calibration(calibration, [camera])
    truth = session.truth["position"].isel(individual=0).transpose("time", "keypoint", "space")
    true_px = opencv_pixels(camera, truth.values)  # (time, keypoint, 2)
    images = []
    for k in range(N_FRAMES):
        image = Image.new("RGB", SIZE, (30, 30, 30))
        draw = ImageDraw.Draw(image)
        for u, v in true_px[k]:
            draw.ellipse([u - 2, v - 2, u + 2, v + 2], fill="white")
        images.append(image)
    video = root / "cam0.mp4"
    write_video(video, images)
    return {
        "root": root,
        "fit": fit,
        "camera": camera,
        "calibration": calibration,
        "video": video,
        "true_px": true_px,
    }


def test_overlay_draws_the_fit_on_the_true_projections(scene):
    out = scene["root"] / "overlay.mp4"
    rendered = render_overlay(
        scene["fit"], scene["video"], out, camera="cam0", calibration=scene["calibration"]
    )
    assert rendered.path == out and out.is_file()
    assert rendered.frames.tolist() == list(range(N_FRAMES))
    drawn = rendered.fitted[:, 0]  # (frame, keypoint, 2), the one individual
    error = np.linalg.norm(drawn - scene["true_px"], axis=-1)
    assert error.max() < 2.0, error.max()  # within 2 px at every frame
    assert rendered.observed is not None  # the tracks' keypoints, through the camera too
    np.testing.assert_allclose(rendered.observed[:, 0], scene["true_px"], atol=0.05)
    with av.open(str(out)) as container:
        stream = container.streams.video[0]
        assert (stream.width, stream.height) == SIZE and stream.average_rate == FPS
        assert sum(1 for _ in container.decode(stream)) == N_FRAMES
    # the joints in the decoded video (without the observed crosses drawn over them): the
    # fit's colour (tab10 blue) within a pixel of every true projection
    out = scene["root"] / "overlay_fit_only.mp4"
    render_overlay(scene["fit"], scene["video"], out, "cam0", scene["calibration"], observed=None)
    with av.open(str(out)) as container:
        decoded = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    blue = np.array([0x1F, 0x77, 0xB4], dtype=float)
    for k in (0, 13, 27, 39):
        near = np.linalg.norm(decoded[k].astype(float) - blue, axis=-1) < 60
        inside = (scene["true_px"][k] > 2).all(axis=1) & (scene["true_px"][k] < [637, 477]).all(1)
        assert inside.all()  # the camera sees the whole body
        for u, v in scene["true_px"][k]:
            c, r = int(round(u)), int(round(v))
            assert near[r - 1 : r + 2, c - 1 : c + 2].any(), (k, u, v)


def test_overlay_through_a_camera_object_and_with_an_offset(scene, tmp_path):
    class Pinhole:  # any object with project(points) -> pixels
        def project(self, points):
            return opencv_pixels(scene["camera"], np.asarray(points))

    late = scene["fit"].isel(time=slice(10, None))
    rendered = render_overlay(
        late, scene["video"], tmp_path / "o.mp4", camera=Pinhole(), offset=10, observed=None
    )
    assert len(rendered.frames) == N_FRAMES - 10 and rendered.observed is None
    error = np.linalg.norm(rendered.fitted[:, 0] - scene["true_px"][10:], axis=-1)
    assert error.max() < 2.0


def test_overlay_bad_input_is_one_clear_error(scene, tmp_path):
    fit, video, calib = scene["fit"], scene["video"], scene["calibration"]
    out = tmp_path / "o.mp4"
    with pytest.raises(InspectError, match=r"40 video frames, but the session has 30 frames"):
        render_overlay(fit.isel(time=slice(0, 30)), video, out, "cam0", calib)
    with pytest.raises(InspectError, match=r"runs at 30 frames/s, the session filmed at 60"):
        render_overlay(fit.assign_attrs(fps=60.0), video, out, "cam0", calib)
    with pytest.raises(
        InspectError, match=r"camera 'cam9' is not in the calibration; cameras: cam0"
    ):
        render_overlay(fit, video, out, "cam9", calib)
    with pytest.raises(InspectError, match=r"has no 'fitted_position'"):
        render_overlay(fit.drop_vars("fitted_position"), video, out, "cam0", calib)
    with pytest.raises(InspectError, match=r"not image pixels; pass the camera"):
        render_overlay(fit, video, out)
    with pytest.raises(InspectError, match=r"extrinsics in mm, the fit is in m"):
        render_overlay(fit, video, out, scene["camera"].replace(unit="mm"))
    with pytest.raises(InspectError, match=r"no such video file"):
        render_overlay(fit, tmp_path / "none.mp4", out, "cam0", calib)
    assert not out.exists() and list(tmp_path.iterdir()) == []  # nothing half-written


def test_overlay_of_single_view_2d_tracks_in_image_coordinates(scene, tmp_path):
    # a fit in pixels (single-view 2D tracks fitted on the image plane): x, y are drawn as is
    fit = scene["fit"]
    px = np.concatenate([scene["true_px"], np.zeros_like(scene["true_px"][..., :1])], axis=-1)
    flat = fit[["fitted_position"]].copy()
    flat["fitted_position"] = (
        ("time", "space", "keypoint", "individual"),
        px.transpose(0, 2, 1)[..., None].astype("float32"),
    )
    flat = flat.assign_attrs(
        unit="px", session="flat", fps=float(FPS), body_plan=fit.attrs["body_plan"]
    )
    rendered = render_overlay(flat, scene["video"], tmp_path / "flat.mp4", observed=None)
    np.testing.assert_allclose(rendered.fitted[:, 0], scene["true_px"], atol=1e-3)


def test_animation_renders_every_frame_from_its_orthographic_camera(scene, tmp_path):
    fit = scene["fit"]
    out = tmp_path / "anim.mp4"
    rendered = render_animation(fit, out, size=(320, 240), azimuth=0, elevation=0, step=2)
    assert rendered.frames.tolist() == list(range(0, N_FRAMES, 2)) and rendered.fps == FPS / 2
    with av.open(str(out)) as container:
        stream = container.streams.video[0]
        assert (stream.width, stream.height) == (320, 240) and stream.average_rate == FPS / 2
        first = next(container.decode(stream)).to_ndarray(format="rgb24")
    assert first.std() > 5  # the skeleton is drawn on the white background
    # seen from +x with y up: image right is -z, image down is -y, one scale for both
    world = fit["fitted_position"].isel(individual=0, time=rendered.frames)
    world = world.transpose("time", "keypoint", "space").values
    du = rendered.fitted[:, 0, :, 0] - rendered.fitted[:, 0, :1, 0]
    dv = rendered.fitted[:, 0, :, 1] - rendered.fitted[:, 0, :1, 1]
    dz, dy = world[..., 2] - world[..., :1, 2], world[..., 1] - world[..., :1, 1]
    scale = -du[dz != 0] / dz[dz != 0]
    np.testing.assert_allclose(scale, scale[0], rtol=1e-6)
    np.testing.assert_allclose(dv, -dy * scale[0], atol=1e-6)
    with pytest.raises(InspectError, match="step must be 1 to the fit.s 40 frames, got 0"):
        render_animation(fit, out, step=0)
    with pytest.raises(InspectError, match="has no 'fitted_position'"):
        render_animation(xr.Dataset(attrs={"session": "x"}), out)
