"""MP4 videos of a fit: the skeleton over the source video, or a 3D animation."""
