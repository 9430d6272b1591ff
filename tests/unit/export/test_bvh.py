"""BVH export read back by an independent reader (bvhio) puts every joint where the fit did."""

from __future__ import annotations

import bvhio
import numpy as np
import pytest

from pipeline.bodyplan import load_body_plan
from pipeline.errors import ExportError
from pipeline.export import export
from pipeline.export.bvh import outputs
from pipeline.export.common import fit_plan
from pipeline.synth import body_size


def _read_back(path, plan, frames):
    """World joint positions ``(frames, joint, 3)`` of a BVH file, by bvhio."""
    root = bvhio.readAsHierarchy(str(path))
    joints = {joint.Name: joint for joint, *_ in root.layout()}
    out = []
    for f in frames:
        root.loadPose(int(f))
        out.append([list(joints[name].PositionWorld) for name in plan.joint_names])
    return np.asarray(out, dtype=np.float64)


@pytest.mark.parametrize("session", ["walk", "hop"])
def test_bvh_reproduces_the_fitted_keypoints(session, request, fits_root, tmp_path):
    fit = request.getfixturevalue(session)
    store = fits_root / ("walk.zarr" if session == "walk" else "lab_b/hop.zarr")
    plan = fit_plan(fit)
    result = export("bvh", store, tmp_path / f"{session}.bvh")
    individuals = [str(i) for i in fit["individual"].values]
    assert len(result.files) == len(individuals)
    size = body_size(plan)
    frames = np.arange(0, fit.sizes["time"], 9)
    for name, path in zip(individuals, result.files, strict=True):
        got = _read_back(path, plan, frames)
        want = fit["fitted_position"].sel(individual=name).transpose("time", "keypoint", "space")
        want = np.asarray(want.values, dtype=np.float64)[frames]
        assert np.abs(got - want).max() < 1e-5 * size
        container = bvhio.readAsBvh(str(path))
        assert container.FrameCount == fit.sizes["time"]
        assert container.FrameTime == pytest.approx(1 / fit.attrs["fps"], rel=1e-9)
        assert container.Root.Channels[:3] == ["Xposition", "Yposition", "Zposition"]


def test_every_joint_has_three_rotation_channels_in_the_stated_order(hop, fits_root, tmp_path):
    path = export("bvh", fits_root / "lab_b/hop.zarr", tmp_path / "h.bvh", rotation_order="yxz")
    root = bvhio.readAsBvh(str(path.files[0])).Root
    stack = [root]
    while stack:
        joint = stack.pop()
        rotations = [c for c in joint.Channels if c.endswith("rotation")]
        assert rotations == ["Yrotation", "Xrotation", "Zrotation"]
        stack.extend(joint.Children)
    plan = fit_plan(hop)
    got = _read_back(path.files[0], plan, [5])
    want = hop["fitted_position"].isel(individual=0, time=5).transpose("keypoint", "space")
    assert np.abs(got[0] - want.values).max() < 1e-5 * body_size(plan)


def test_one_individual_and_bad_options(walk, fits_root, tmp_path):
    store = fits_root / "walk.zarr"
    single = export("bvh", store, tmp_path / "one.bvh", individual="individual_1")
    assert single.files == (tmp_path / "one.bvh",)
    with pytest.raises(ExportError, match=r"no individual 'nobody'; individuals: individual_0"):
        export("bvh", store, tmp_path / "x.bvh", individual="nobody")
    with pytest.raises(ExportError, match=r"rotation order 'ZZY'; valid: ZXY"):
        export("bvh", store, tmp_path / "x.bvh", rotation_order="ZZY")
    assert not (tmp_path / "x.bvh").exists()


def test_slides_have_no_bvh_equivalent(tmp_path):
    plan = load_body_plan(
        {
            "fixed_base": True,
            "joints": [
                {
                    "name": "r",
                    "parent": None,
                    "offset_pos": [0, 0, 0],
                    "offset_quat": [1, 0, 0, 0],
                    "dofs": [],
                },
                {
                    "name": "s",
                    "parent": "r",
                    "offset_pos": [1, 0, 0],
                    "offset_quat": [1, 0, 0, 0],
                    "dofs": [{"type": "slide", "axis": [1, 0, 0], "neutral": 0}],
                },
                {
                    "name": "t",
                    "parent": "s",
                    "offset_pos": [1, 0, 0],
                    "offset_quat": [1, 0, 0, 0],
                    "dofs": [],
                },
            ],
        }
    )
    with pytest.raises(ExportError, match=r"joint\(s\) s have slide DOFs"):
        outputs(None, plan, tmp_path / "s.bvh")
