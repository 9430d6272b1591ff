"""Calibration through cameras beside the 3D calibration of the same subject, same run.

The mannequin subject of ``tests/unit/calibrate/subjects.py`` (segments scaled per
symmetric group by up to 15 %, markers 2-5 % of the body off their joints) moves for
``--frames`` frames; it is calibrated (``--calib-frames`` chosen) once from its 3D
keypoints (0.2 % noise) and once from four calibrated cameras' pixels (1 px noise,
occlusions, keypoints one camera sees; the rig of ``tests/fixtures/multiview_rig.py``).
Printed per route: wall time, shape iterations, the residual before and after, and the
median and worst segment-length error against the subject's true plan. Then the
single-view image-scale estimate of SLEAP's ``minimal_back_proofread.slp`` mouse (wall
time, the estimate).

Run: ``.venv/bin/python benchmarks/calibration_views.py [--frames 300] [--calib-frames 200]``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"  # one core: before numpy is imported

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.calibrate import CalibrationConfig, calibrate  # noqa: E402
from pipeline.synth.camera_views import ViewsConfig, render_views  # noqa: E402
from pipeline.tracks.multiview import make_multiview_dataset  # noqa: E402
from tests.fixtures.multiview_rig import mannequin_rig  # noqa: E402
from tests.unit.calibrate.subjects import make_subject, mannequin_template, render  # noqa: E402


def _errors(template, subject, params, plan) -> tuple[float, float]:
    seg = [
        i
        for i, j in enumerate(template.joints)
        if j.parent is not None and any(j.offset_pos) and i not in params.markers
    ]
    got = np.linalg.norm([plan.joints[i].offset_pos for i in seg], axis=1)
    true = np.linalg.norm([subject.joints[i].offset_pos for i in seg], axis=1)
    err = np.abs(got / true - 1)
    return float(np.median(err)), float(err.max())


def main() -> None:
    """Print both routes' figures and the image-scale estimate's."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=300)
    ap.add_argument("--calib-frames", type=int, default=200)
    args = ap.parse_args()
    rng = np.random.default_rng(7)
    template = mannequin_template()
    subject, _, params = make_subject(template, rng)
    session = render(subject, rng, n_frames=args.frames)
    points = session.truth["position"].values[..., 0].transpose(0, 2, 1)
    cameras = mannequin_rig(4)
    pixels, conf = render_views(points, cameras, ViewsConfig(noise_px=1.0, outliers=0.0), rng)
    views = make_multiview_dataset(
        pixels.transpose(0, 1, 3, 2)[..., None],
        conf[..., None],
        cameras=cameras,
        keypoints=template.joint_names,
        individuals=["subject"],
        session="rig",
    )
    config = CalibrationConfig(n_frames=args.calib_frames, min_frames=20)
    print(f"mannequin subject, {args.frames} frames, {args.calib_frames} calibration frames")
    for name, tracks in (("3D keypoints", session.tracks), ("4 cameras (px)", views)):
        t0 = time.perf_counter()
        cal = calibrate(template, tracks, config)
        wall = time.perf_counter() - t0
        median, worst = _errors(template, subject, params, cal.plan)
        rec = cal.record
        unit = rec.get("residual_unit") or ""
        print(
            f"  {name:15s} {wall:6.1f} s, {rec['iterations']:2d} iterations, RMS "
            f"{cal.rms_before:.4g} -> {cal.rms_after:.4g} {unit}; segment length error "
            f"median {median:.2%}, worst {worst:.2%}"
        )
    from pipeline.bodyplan import load_body_plan
    from pipeline.calibrate.image_scale import session_image_scale
    from pipeline.tracks import read_tracks
    from pipeline.tracks.mapping import map_keypoints
    from tests.fixtures.shared_data import SHARED

    slp = SHARED / "data" / "realdata" / "unclaimed" / "minimal_back_proofread.slp"
    if not slp.is_file():
        print(f"{slp}: not here; no image-scale figure")
        return
    ds = read_tracks(slp, fps=30.0)
    plan = load_body_plan(
        Path(__file__).resolve().parents[1] / "configs/bodyplans/mouse_topdown.json"
    )
    names = {"Nose": "snout", "Ear_L": "leftear", "Ear_R": "rightear", "TTI": "tailbase"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mapping = map_keypoints(ds["keypoint"].values, plan.joint_names, names)
    t0 = time.perf_counter()
    est = session_image_scale(ds, plan, mapping)
    wall = time.perf_counter() - t0
    print(
        f"image scale of the .slp mouse ({ds.sizes['time']} frames): {est.value:.4f} "
        f"+- {est.std:.3f} per px, RMS {est.rms_px:.2f} px, {wall:.1f} s"
    )


if __name__ == "__main__":
    main()
