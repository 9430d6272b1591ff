"""kinefit's library: body plans, kinematics, solver, stores and session fitting.

Plain functions and frozen dataclasses; never imports prefect (orchestration lives in
``flows``).
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("kinefit")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
