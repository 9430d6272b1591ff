"""OpenSim tool setups as kinefit input: the ``InverseKinematicsTool`` setup and its run."""

from pipeline.opensim_setup.ik_setup import CoordinateTask, IKSetup, MarkerTask, read_ik_setup

__all__ = ["CoordinateTask", "IKSetup", "MarkerTask", "read_ik_setup"]
