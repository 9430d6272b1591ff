"""Which errors a retry can cure (the flows retry those): I/O hiccups and lost workers."""

from __future__ import annotations

import errno

import pytest

from pipeline.archive.policy import is_transient
from pipeline.fit import FitError


def fit_error_from(code: int) -> FitError:
    try:
        try:
            raise OSError(code, "write failed")
        except OSError as exc:
            raise FitError("out.zarr: cannot write") from exc
    except FitError as err:
        return err


@pytest.mark.parametrize("code", [errno.EROFS, errno.ENOSPC, errno.EACCES])
def test_full_or_read_only_output_is_not_retried(code):
    assert not is_transient(fit_error_from(code))


@pytest.mark.parametrize("code", [errno.EIO, errno.EAGAIN])
def test_io_hiccups_are_retried(code):
    assert is_transient(fit_error_from(code))


def test_bad_input_is_not_retried():
    assert not is_transient(ValueError("bad body plan"))
    assert is_transient(TimeoutError())
