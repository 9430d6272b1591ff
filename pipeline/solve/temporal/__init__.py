"""Motion over time: smoothing in the fit, bridged gaps, velocities, uncertainties.

- :mod:`.model`: the constant-acceleration motion prior and its process noise;
- :mod:`.uncertainty`: each frame's keypoint information, noise level, observability;
- :mod:`.marginal`: the per-coordinate forward filter and RTS smoother (compiled);
- :mod:`.stretch`: where each coordinate's smoothing starts (from its own first frames);
- :mod:`.matrix3`: the 3x3 algebra of the smoother's state;
- :mod:`.annotate`: what ``SolverConfig.temporal`` makes of a sequence's per-frame fits.

This package imports nothing itself (the solver's config imports :mod:`.model`).
"""
