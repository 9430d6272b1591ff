"""Paths of the shared model files (``../shared/data/models``) and small helpers."""

from __future__ import annotations

import pytest

from tests.fixtures.shared_data import SHARED

MODELS = SHARED / "data" / "models"
MJCF = MODELS / "mjcf"
URDF = MODELS / "urdf"
OSIM = MODELS / "osim"
BVH = MODELS / "bvh"
REALDATA = SHARED / "data" / "realdata"

#: The MJCF files MuJoCo loads as they are (mesh models through their nomesh copies).
MJCF_FILES = (
    "unitree_g1.nomesh.xml",
    "unitree_h1.nomesh.xml",
    "franka_panda.nomesh.xml",
    "humanoid_CMU.xml",
    "neuromechfly_seqik_kinorder_ypr.nomesh.xml",
)
URDF_FILES = (
    "unitree_g1_29dof_rev_1_0.urdf",
    "unitree_h1.urdf",
    "franka_panda.urdf",
    "gepetto_human.urdf",
    "double_pendulum_continuous.urdf",
)
OSIM_FILES = ("arm26.osim", "gait2392_thelen2003muscle.osim", "Rajagopal2016.osim")
BVH_FILES = (
    BVH / "cmu_01_01.bvh",
    REALDATA / "bvh" / "AV_8Walk_Meredith_HVHA_Rep1.bvh",
    REALDATA / "bvh" / "test_freebvh.bvh",
    REALDATA / "bvh" / "test_mocapbank.bvh",
)


def need(module: str, extra: str):
    """Import an optional engine or skip, naming the extra that installs it."""
    return pytest.importorskip(module, reason=f"needs {module}: pip install 'kinefit[{extra}]'")
