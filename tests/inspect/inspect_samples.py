"""Hand-made fit-like datasets with known diagnostics (no solver involved)."""

import numpy as np
import xarray as xr


def handmade_fit(rms: np.ndarray, fps: float = 10.0) -> xr.Dataset:
    """A fit-shaped Dataset with the given ``rms_error (time, individual)``.

    Two keypoints ``a`` and ``b``: the residual of ``a`` is the RMS, ``b`` is twice it;
    ``max_error`` is ``b``'s. Frame ``t`` is converged unless ``t % 4 == 3``; DOF ``d1``
    sits at its limit on even frames of individual ``i0``; no seams disagree except seam
    1 of ``i1`` (0.25).
    """
    rms = np.asarray(rms, dtype=float)
    n, m = rms.shape
    residual = np.stack([rms, 2 * rms], axis=-1)
    frames = np.arange(n)
    converged = np.repeat((frames % 4 != 3)[:, None], m, axis=1)
    limit = np.zeros((n, m, 2), dtype=bool)
    limit[::2, 0, 1] = True
    seam = np.zeros((2, m), dtype=float)
    seam[0] = np.nan
    seam[1, -1] = 0.25
    dof = np.stack([np.sin(frames / 5.0), np.cos(frames / 5.0)], axis=-1)
    return xr.Dataset(
        {
            "rms_error": (("time", "individual"), rms),
            "max_error": (("time", "individual"), 2 * rms),
            "residual": (("time", "individual", "keypoint"), residual),
            "iterations": (("time", "individual"), np.tile((frames % 7 + 1)[:, None], (1, m))),
            "converged": (("time", "individual"), converged),
            "limit_active": (("time", "individual", "dof"), limit),
            "dof_value": (("time", "individual", "dof"), np.repeat(dof[:, None], m, axis=1)),
            "seam_disagreement": (("seam", "individual"), seam),
        },
        coords={
            "time": frames / fps,
            "individual": [f"i{k}" for k in range(m)],
            "keypoint": ["a", "b"],
            "dof": ["d0", "d1"],
            "seam": [0, n // 2],
        },
        attrs={"unit": "mm", "time_unit": "seconds", "fps": fps, "session": "handmade"},
    )
