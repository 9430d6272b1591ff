"""Plot helpers: each takes a fit Dataset (or one of its DataArrays) and returns a Figure.

Figures are plain :class:`matplotlib.figure.Figure` objects (never pyplot's global state);
render them with :func:`figure_png` or ``fig.savefig``, or show them in a notebook.
"""

from pipeline.inspect.plots.archive import plot_archive_overview
from pipeline.inspect.plots.common import figure_png
from pipeline.inspect.plots.dofs import plot_dof_trajectories
from pipeline.inspect.plots.errors import plot_error_distributions, plot_residual_heatmap
from pipeline.inspect.plots.skeleton import plot_skeleton_frame
from pipeline.inspect.plots.solver import plot_solver_convergence

__all__ = [
    "figure_png",
    "plot_archive_overview",
    "plot_dof_trajectories",
    "plot_error_distributions",
    "plot_residual_heatmap",
    "plot_skeleton_frame",
    "plot_solver_convergence",
]
