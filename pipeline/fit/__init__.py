"""Session fitting on dask: validate and plan (session), the chunk task, run and publish."""

from pipeline.errors import FitError, SessionLockedError
from pipeline.fit.chunk import ChunkTask, fit_chunk
from pipeline.fit.run import FitReport
from pipeline.fit.session import check_fit_request, fit_session

__all__ = [
    "ChunkTask",
    "FitError",
    "FitReport",
    "SessionLockedError",
    "check_fit_request",
    "fit_chunk",
    "fit_session",
]
