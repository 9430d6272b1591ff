"""SLEAP project and prediction files (``.slp``), read with sleap-io (the extra ``sleap``).

A ``.slp`` file is SLEAP's main output: labeled frames of one or more videos, each with
user instances (hand labels) and predicted instances (with per-point scores), assigned to
tracks or not. It is read with `sleap-io <https://io.sleap.ai>`_, the library SLEAP's
authors maintain for these files:

- keypoints: the skeleton's node names (a file with several skeletons is refused);
- individuals: the tracks, in file order; an untracked file gives one individual per
  instance slot (``instance_0``, ``instance_1``, ...), in the order of each frame;
- a frame with both a user and a predicted instance of one track takes the user instance
  (hand labels win, SLEAP's own rule), unless ``user_instances=False``;
- confidence: the predicted points' scores, 1 for user-labeled points (as sleap-io and
  SLEAP's analysis export give them);
- time: the video's frame index; frames without labels are missing (NaN);
- one video per session: a file of several videos needs ``video=`` (index or filename).

Attrs: coordinates are image pixels with y pointing down, so ``unit`` is ``"px"`` and
``up_axis`` ``"-y"``. The file records no frame rate: ``fps=`` is required.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from pipeline.errors import reader_option
from pipeline.tracks.readers.reader_helpers import fail, is_hdf5, missing_extra, resolve_fps
from pipeline.tracks.schema import make_tracks_dataset

FORMAT = "slp"
SUFFIXES: tuple[str, ...] = (".slp",)
SOFTWARE = "SLEAP"
#: Datasets every ``.slp`` file holds.
SLP_DATASETS = ("frames", "instances", "points", "metadata")


def sniff(path: str | Path) -> bool:
    """Return True for an HDF5 file with SLEAP's ``frames``/``instances``/``points``."""
    if not is_hdf5(path):
        return False
    import h5py

    try:
        with h5py.File(path, "r") as handle:
            return all(name in handle for name in SLP_DATASETS)
    except OSError:
        return False


def _pick_video(path: Path, labels, video: int | str | None):
    videos = list(labels.videos)
    names = [str(v.filename) for v in videos]
    if video is None:
        if len(videos) != 1:
            raise fail(
                path,
                f"the file labels {len(videos)} videos; pass {reader_option('video', 'INDEX')} "
                f"(an index or a filename) to pick one: {names}",
            )
        return videos[0]
    if isinstance(video, int) and not isinstance(video, bool) and 0 <= video < len(videos):
        return videos[video]
    matches = [v for v, n in zip(videos, names, strict=True) if n == str(video)]
    matches = matches or [v for v, n in zip(videos, names, strict=True) if Path(n).name == video]
    if len(matches) != 1:
        raise fail(
            path,
            f"option 'video': {video!r} is not one of the file's videos (0..{len(videos) - 1}): "
            f"{names}",
        )
    return matches[0]


def parse(path: str | Path, *, video: int | str | None = None, user_instances: bool = True):
    """Read a ``.slp`` file into arrays with sleap-io.

    Returns
    -------
    dict
        ``position (n_frames, 2, n_nodes, n_individuals)``, ``confidence (n_frames,
        n_nodes, n_individuals)``, ``keypoints``, ``individuals``, ``video``,
        ``n_user``, ``n_predicted`` (instances in the chosen video).
    """
    path = Path(path)
    try:
        import sleap_io
    except ImportError:
        raise missing_extra(path, "SLEAP .slp", "sleap", "sleap-io") from None
    try:
        labels = sleap_io.load_slp(str(path), open_videos=False)
    except Exception as err:  # noqa: BLE001 - h5py/sleap-io raise many types on bad files
        raise fail(path, f"not a readable SLEAP .slp file (truncated or corrupt?): {err}") from None
    if len(labels.skeletons) != 1:
        raise fail(path, f"the file has {len(labels.skeletons)} skeletons; expected one")
    chosen = _pick_video(path, labels, video)
    frames = [lf for lf in labels.labeled_frames if lf.video is chosen]
    if not frames:
        raise fail(path, f"no labeled frames in video {str(chosen.filename)!r}")
    tracked = bool(labels.tracks)
    data = labels.numpy(
        video=chosen, untracked=not tracked, return_confidence=True, user_instances=user_instances
    )
    individuals = [str(t.name) for t in labels.tracks] if tracked else None
    if individuals is None:
        individuals = [f"instance_{i}" for i in range(data.shape[1])]
    instances = [inst for lf in frames for inst in lf.instances]
    n_predicted = sum(type(inst).__name__ == "PredictedInstance" for inst in instances)
    return {
        "position": data[..., :2].transpose(0, 3, 2, 1),
        "confidence": data[..., 2].transpose(0, 2, 1),
        "keypoints": [str(n) for n in labels.skeletons[0].node_names],
        "individuals": individuals,
        "video": str(chosen.filename),
        "n_user": len(instances) - n_predicted,
        "n_predicted": n_predicted,
    }


def read(
    path: str | Path,
    *,
    fps: float | None = None,
    video: int | str | None = None,
    user_instances: bool = True,
) -> xr.Dataset:
    """Read a SLEAP ``.slp`` file (see the module docstring).

    Parameters
    ----------
    path : str or Path
        The ``.slp`` file.
    fps : float
        Frames per second (not in the file): required.
    video : int or str, optional
        Which video's labels to read, by index or filename; required when the file
        labels several videos.
    user_instances : bool
        Prefer a frame's user (hand-labeled) instance over the predicted one of the same
        track (default, as SLEAP does); False reads predictions only where both exist.

    Returns
    -------
    xarray.Dataset
        ``position (time, space=[x, y], keypoint, individual)`` in pixels (up axis
        ``"-y"``), ``confidence`` = point scores (1 for user-labeled points),
        ``time`` = frame index / fps.

    Raises
    ------
    TracksError
        Unreadable file, several skeletons, several videos without ``video=``, no
        labeled frames, no ``fps``; also when sleap-io is missing (extra ``sleap``).
    """
    path = Path(path)
    if not is_hdf5(path):
        raise fail(path, "not an HDF5 file (a SLEAP .slp file is HDF5)")
    arrays = parse(path, video=video, user_instances=user_instances)
    rate = resolve_fps(path, SOFTWARE, None, fps)
    return make_tracks_dataset(
        np.asarray(arrays["position"], dtype=np.float64),
        np.asarray(arrays["confidence"], dtype=np.float64),
        keypoints=arrays["keypoints"],
        individuals=arrays["individuals"],
        fps=rate,
        space=("x", "y"),
        source_software=SOFTWARE,
        source_file=path,
        unit="px",
        up_axis="-y",
        extra_attrs={
            "source_format": FORMAT,
            "video": arrays["video"],
            "n_user_instances": arrays["n_user"],
            "n_predicted_instances": arrays["n_predicted"],
        },
    )
