"""OpenSim tool setups as kinefit input: ``InverseKinematicsTool`` and ``ScaleTool`` setups.

Readers here; the runs are :func:`pipeline.opensim_setup.ik_run.run_ik` (``kinefit ik``),
:func:`pipeline.opensim_setup.scale_run.run_scale` (``kinefit calibrate --opensim-setup``)
and :func:`pipeline.opensim_setup.fit_terms.setup_fit` (an IK setup's tasks in archive fits).
"""

from pipeline.opensim_setup.ik_setup import CoordinateTask, IKSetup, MarkerTask, read_ik_setup
from pipeline.opensim_setup.scale_setup import (
    ManualScale,
    Measurement,
    ScaleSetup,
    read_scale_setup,
)

__all__ = [
    "CoordinateTask",
    "IKSetup",
    "ManualScale",
    "MarkerTask",
    "Measurement",
    "ScaleSetup",
    "read_ik_setup",
    "read_scale_setup",
]
