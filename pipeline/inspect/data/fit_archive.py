"""Open a folder of fit stores (an archive) lazily, and the tracks a fit was made from.

An archive is any folder holding fit stores (``*.zarr`` directories written by
:func:`pipeline.fit.fit_session`), at any depth. :func:`open_archive` returns a
:class:`FitArchive`: a read-only mapping from session key to the lazily opened fit
``xarray.Dataset`` (dask-backed, nothing loaded), plus the per-session summary table.
A session's key is its store's path relative to the archive root, without ``.zarr``
(``"s1"`` for ``fits/s1.zarr`` opened as ``open_archive("fits")``), so keys are unique
and match what is on disk. :meth:`FitArchive.to_datatree` gives the same sessions as an
``xarray.DataTree`` for those who prefer one.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from pipeline.export.observability import observed_points
from pipeline.inspect.data.checks import InspectError
from pipeline.inspect.data.observation import on_image_plane, to_fit_space
from pipeline.inspect.data.summaries import summary_table
from pipeline.store.fit import (
    READABLE_SCHEMA_VERSIONS,
    SCHEMA_VERSION,
    FitStoreError,
    open_fit,
    store_attrs,
)
from pipeline.store.tracks import open_tracks

__all__ = ["FitArchive", "find_fit_stores", "observed_positions", "open_archive", "open_observed"]


def _is_zarr(path: Path) -> bool:
    return (path / "zarr.json").is_file() or (path / ".zgroup").is_file()


def _is_fit(attrs: Mapping) -> bool:
    return "fingerprint" in attrs and attrs.get("schema_version") is not None


def find_fit_stores(root: str | Path) -> tuple[dict[str, Path], dict[str, str]]:
    """Find the fit stores under ``root``.

    Parameters
    ----------
    root : str or Path
        A folder (searched recursively, hidden folders skipped), or one fit store.

    Returns
    -------
    stores : dict
        Session key -> store path, sorted by key; only complete fit stores.
    problems : dict
        Path -> reason, for fit stores that cannot be opened (incomplete, another
        schema) and for unfinished fits (``.<name>.partial``). Other zarr stores (tracks)
        are skipped silently.

    Raises
    ------
    FileNotFoundError
        ``root`` does not exist.
    """
    root = Path(root)
    if not root.exists():
        raise FileNotFoundError(f"{root}: no such fits folder")
    stores: dict[str, Path] = {}
    problems: dict[str, str] = {}

    def consider(path: Path, key: str) -> None:
        attrs = store_attrs(path)
        if not _is_fit(attrs):
            return
        if attrs.get("schema_version") not in READABLE_SCHEMA_VERSIONS:
            problems[str(path)] = (
                f"fit store schema_version {attrs.get('schema_version')!r}, "
                f"this kinefit reads {SCHEMA_VERSION}"
            )
        elif not attrs.get("complete"):
            problems[str(path)] = "incomplete fit store (rerun the fit to finish it)"
        else:
            stores[key] = path

    if _is_zarr(root):
        consider(root, root.name.removesuffix(".zarr"))
        return stores, problems
    for folder, subdirs, _ in os.walk(root):
        here = Path(folder)
        keep = []
        for name in sorted(subdirs):
            path = here / name
            if name.startswith("."):
                if name.endswith(".partial") and _is_fit(store_attrs(path)):
                    problems[str(path)] = "unfinished fit (partial store; rerun to resume)"
            elif _is_zarr(path):
                consider(path, path.relative_to(root).as_posix().removesuffix(".zarr"))
            else:
                keep.append(name)
        subdirs[:] = keep
    return dict(sorted(stores.items())), problems


class FitArchive(Mapping[str, xr.Dataset]):
    """The fits of an archive: session key -> lazily opened fit Dataset.

    Attributes
    ----------
    root : Path
        The archive folder.
    paths : dict
        Session key -> fit store path.
    problems : dict
        Store path -> why it was left out (see :func:`find_fit_stores`).
    summary : pandas.DataFrame
        One row per session (:func:`pipeline.inspect.summary_table`); computed on first
        access, reading only the per-frame diagnostics.
    """

    def __init__(self, root: Path, fits: dict[str, xr.Dataset], paths, problems) -> None:
        self.root = root
        self._fits = fits
        self.paths: dict[str, Path] = dict(paths)
        self.problems: dict[str, str] = dict(problems)

    def __getitem__(self, key: str) -> xr.Dataset:
        try:
            return self._fits[key]
        except KeyError:
            raise KeyError(
                f"no session {key!r} in {self.root}; sessions: {', '.join(self._fits) or 'none'}"
            ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._fits)

    def __len__(self) -> int:
        return len(self._fits)

    def __repr__(self) -> str:
        return f"FitArchive({str(self.root)!r}, sessions={list(self._fits)})"

    @cached_property
    def summary(self) -> pd.DataFrame:
        """Per-session summary table (see :func:`pipeline.inspect.summary_table`)."""
        return summary_table(self._fits)

    def to_datatree(self) -> xr.DataTree:
        """The sessions as an ``xarray.DataTree`` (one child node per session key)."""
        return xr.DataTree.from_dict({f"/{k}": ds for k, ds in self._fits.items()})


def open_archive(fits_root: str | Path) -> FitArchive:
    """Open every complete fit store under ``fits_root`` lazily.

    Parameters
    ----------
    fits_root : str or Path
        Folder of fit stores (any depth), or a single fit store.

    Returns
    -------
    FitArchive
        Mapping session key -> dask-backed fit Dataset (nothing is loaded), with
        ``.summary`` (pandas DataFrame, one row per session) and ``.problems``.

    Raises
    ------
    FileNotFoundError
        ``fits_root`` does not exist.
    """
    root = Path(fits_root)
    paths, problems = find_fit_stores(root)
    fits = {}
    for key, path in list(paths.items()):
        try:
            fits[key] = open_fit(path)
        except (FitStoreError, OSError, ValueError) as exc:
            problems[str(path)] = str(exc)
            del paths[key]
    return FitArchive(root, fits, paths, problems)


def observed_positions(fit: xr.Dataset, tracks: xr.Dataset | xr.DataArray) -> xr.DataArray:
    """The tracked keypoints a fit was made from, renamed and ordered as the fit's joints.

    Parameters
    ----------
    fit : xarray.Dataset
        A fit (its ``keypoint_map`` attr says which track keypoint observes which joint).
    tracks : xarray.Dataset or xarray.DataArray
        The tracks dataset (or its ``position``), already opened.

    Returns
    -------
    xarray.DataArray
        ``position (time, space, keypoint, individual)`` with the fit's ``keypoint``
        coordinate (joint names; NaN where no track keypoint observes a joint); lazy
        when ``tracks`` is. A single-view 2D fit's pixels become points of its image
        plane (:func:`~pipeline.inspect.data.observation.to_fit_space`); a multi-view
        fit's detections are triangulated through its cameras (loaded, not lazy).

    Raises
    ------
    InspectError
        No track keypoint maps to a joint of the fit.
    """
    position = tracks["position"] if isinstance(tracks, xr.Dataset) else tracks
    names = [str(k) for k in position["keypoint"].values]
    pairs = fit.attrs.get("keypoint_map") or [(k, k) for k in names]
    pairs = [(str(a), str(b)) for a, b in pairs if str(a) in names]
    if not pairs:
        raise InspectError(
            f"no track keypoint observes a joint of the fit; track keypoints: {', '.join(names)}"
        )
    position = position.sel(keypoint=[a for a, _ in pairs])
    position = position.assign_coords(keypoint=np.array([b for _, b in pairs], dtype=object))
    out = position.reindex(keypoint=fit["keypoint"].values)
    if on_image_plane(fit) and "space" in fit.coords and out.sizes["space"] < fit.sizes["space"]:
        out = to_fit_space(fit, out)
    elif "view" in out.dims:  # calibrated views: their detections triangulated
        out = _triangulated(fit, out)
    return out.transpose("time", "space", "keypoint", "individual").rename("observed_position")


def _triangulated(fit: xr.Dataset, pixels: xr.DataArray) -> xr.DataArray:
    """Multi-view detections ``(time, view, space=[x, y], keypoint, individual)`` as points.

    Triangulated through the fit's cameras (already in the fit's frame); NaN where fewer
    than two views see a keypoint.
    """
    pix = pixels.transpose("time", "view", "keypoint", "space", "individual").values
    points = np.stack(
        [observed_points(fit, pix[..., i]) for i in range(pix.shape[-1])], axis=-1
    )  # (time, keypoint, 3, individual)
    return xr.DataArray(
        points.transpose(0, 2, 1, 3),
        dims=("time", "space", "keypoint", "individual"),
        coords={
            "time": pixels["time"].values,
            "space": np.asarray(fit["space"].values, dtype=object),
            "keypoint": pixels["keypoint"].values,
            "individual": pixels["individual"].values,
        },
    )


def open_observed(fit: xr.Dataset) -> xr.DataArray:
    """Open the tracks store a fit was made from (its ``tracks_store`` attr), lazily.

    Returns
    -------
    xarray.DataArray
        As :func:`observed_positions`.

    Raises
    ------
    FileNotFoundError
        The fit records no tracks store, or it is no longer there.
    """
    path = fit.attrs.get("tracks_store")
    if not path:
        raise FileNotFoundError("the fit records no tracks store (attr 'tracks_store')")
    if not Path(path).exists():
        raise FileNotFoundError(f"{path}: the fit's tracks store is no longer there")
    return observed_positions(fit, open_tracks(path))
