"""Inspect fits: open an archive lazily, summarize it, plot it, write an HTML report.

- :func:`open_archive` -> :class:`FitArchive` (session key -> lazy fit Dataset, with a
  ``.summary`` DataFrame); :func:`open_observed` gives the tracks a fit was made from.
- Tables: :func:`summary_table`, :func:`session_summary`, :func:`individual_summary`,
  :func:`worst_frames`, :func:`provenance`.
- Plots (each takes a Dataset and returns a matplotlib Figure, reading no file):
  :func:`plot_dof_trajectories`, :func:`plot_residual_heatmap`,
  :func:`plot_error_distributions`, :func:`plot_skeleton_frame`,
  :func:`plot_solver_convergence`, and :func:`plot_archive_overview` (from a summary).
  :func:`plot_angle_trajectories` (named angles, +-1 SD bands) and
  :func:`plot_angle_distributions` (per session and individual).
- Interactive: :func:`view` (a notebook cell) and :func:`viewer_figure`: the fit played
  over time in a rotatable 3D plotly figure with the angles and a time cursor.
- Video: :func:`render_overlay` (the skeleton drawn onto the session's video, through its
  camera) and :func:`render_animation` (a 3D animation), both MP4 (the ``viz`` extra).
- Reports: :func:`write_session_report`, :func:`write_archive_report` (self-contained
  HTML: figures embedded as PNG, the viewer with plotly's JavaScript embedded once, no
  network).
"""

from pipeline.inspect.data.checks import InspectError, joint_dofs
from pipeline.inspect.data.fit_archive import (
    FitArchive,
    find_fit_stores,
    observed_positions,
    open_archive,
    open_observed,
)
from pipeline.inspect.data.summaries import (
    individual_summary,
    provenance,
    session_summary,
    summary_table,
    worst_frames,
)
from pipeline.inspect.data.truth import open_truth, truth_errors
from pipeline.inspect.plots.angle_trajectories import plot_angle_trajectories
from pipeline.inspect.plots.archive_overview import plot_archive_overview
from pipeline.inspect.plots.convergence import plot_solver_convergence
from pipeline.inspect.plots.distributions import plot_angle_distributions
from pipeline.inspect.plots.dofs import plot_dof_trajectories
from pipeline.inspect.plots.figures import figure_png
from pipeline.inspect.plots.residuals import plot_error_distributions, plot_residual_heatmap
from pipeline.inspect.plots.skeleton_frame import plot_skeleton_frame
from pipeline.inspect.render.movies import Rendered, render_animation, render_overlay
from pipeline.inspect.report.pages import (
    archive_report_html,
    session_report_html,
    write_archive_report,
    write_session_report,
)
from pipeline.inspect.viewer.figure import view, viewer_figure
from pipeline.store.fit import open_fit

__all__ = [
    "FitArchive",
    "InspectError",
    "archive_report_html",
    "figure_png",
    "find_fit_stores",
    "individual_summary",
    "joint_dofs",
    "observed_positions",
    "open_archive",
    "open_fit",
    "open_observed",
    "open_truth",
    "plot_angle_distributions",
    "plot_angle_trajectories",
    "plot_archive_overview",
    "plot_dof_trajectories",
    "plot_error_distributions",
    "plot_residual_heatmap",
    "plot_skeleton_frame",
    "plot_solver_convergence",
    "provenance",
    "Rendered",
    "render_animation",
    "render_overlay",
    "session_report_html",
    "session_summary",
    "summary_table",
    "truth_errors",
    "view",
    "viewer_figure",
    "worst_frames",
    "write_archive_report",
    "write_session_report",
]
