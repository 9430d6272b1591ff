"""The normal-matrix terms of a coupled plan that one screw per coordinate leaves out.

The assembly (:func:`.normal.assemble`, :func:`.projection.assemble_px`) computes a
coordinate ``s``'s row as if each coordinate moved the keypoints below its home joint by
its home screw only: with ``f_s = sum_b Phi_{j_b} xi_b`` over the groups ``b`` of ``s``
(home and extra, :mod:`pipeline.kinematics.step_groups`), its entry with a DOF ancestor
``i`` is ``xi_i^T f_s`` (``xi_i`` the home screw of ``i``) and its diagonal
``sum_b xi_b^T Phi_{j_b} xi_b``. That is exact when the groups of the two coordinates'
pairs are the home of ``i`` above every group of ``s``, and the groups of ``s`` are
disjoint (knees, patellae). The exact entry is ``sum_{a, b} xi_a^T Phi_J xi_b`` over the
groups ``a`` of ``i`` and ``b`` of ``s`` whose subtrees nest, ``J`` the deeper joint
(``Phi_J`` the moments of the keypoints strictly below ``J``); the diagonal the same over
ordered pairs of the groups of ``s``.

:func:`correction_terms` lists the difference, exact minus assembled, as terms
``coef * xi_a^T Phi_J xi_b`` added to an entry after the assembly: nothing for an
uncoupled plan or one whose groups are disjoint and below their DOF's ancestors; for a
vertebral column whose lumbar coordinates also drive the joints above (Pose2Sim's and
Rajagopal-style spines), the nested groups' cross terms; for a coordinate moved under a
coupled one by :func:`~pipeline.kinematics.step_groups.elimination_parents`, its
entries with that one.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from pipeline.kinematics.step_groups import joint_ancestors, meet

__all__ = ["FIX_A", "FIX_B", "FIX_JOINT", "FIX_ROW", "FIX_SLOT", "correction_terms"]

#: Columns of ``fix_int``: the state row, the ancestor slot (-1: the diagonal), the two
#: screws (indices into ``axes``/``pivots``: a DOF's home screw is the DOF's index, extra
#: group ``e`` is ``N + e``) and the joint whose subtree moments ``Phi_J`` they meet in.
FIX_ROW, FIX_SLOT, FIX_A, FIX_B, FIX_JOINT = range(5)


def correction_terms(
    parent: np.ndarray,
    groups: list[list[tuple[int, int]]],
    ancestors: np.ndarray,
    local_depth: np.ndarray,
    n_root: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Terms that make the assembled normal matrix exact (module docstring).

    Parameters
    ----------
    parent : (J,) int
    groups : list of list of (screw, joint)
        Per DOF, :meth:`~pipeline.kinematics.step_groups.StepGroups.groups`.
    ancestors, local_depth
        The tables' elimination tree (``ancestors[s, :local_depth[s]]``: the DOF
        coordinates above state ``s``, nearest first).
    n_root : int

    Returns
    -------
    fix_int : (C, 5) int64
        Columns ``FIX_*``.
    fix_coef : (C,) float64
    """
    above = joint_ancestors(np.asarray(parent))
    nr = n_root
    rows: list[tuple[int, int, int, int, int]] = []
    coefs: list[float] = []

    def add(diff: Counter, row: int, slot: int) -> None:
        for (a, b, j), c in sorted(diff.items()):
            if c:
                rows.append((row, slot, a, b, j))
                coefs.append(float(c))

    for k, gk in enumerate(groups):
        s = nr + k
        exact: Counter = Counter()
        for a, ja in gk:
            for b, jb in gk:
                j = meet(above, ja, jb)
                if j >= 0:
                    exact[(a, b, j)] += 1
        assembled = Counter({(b, b, jb): 1 for b, jb in gk})
        exact.subtract(assembled)
        add(exact, s, -1)
        for m in range(int(local_depth[s])):
            i = int(ancestors[s, m]) - nr
            exact = Counter()
            for a, ja in groups[i]:
                for b, jb in gk:
                    j = meet(above, ja, jb)
                    if j >= 0:
                        exact[(a, b, j)] += 1
            home = groups[i][0][0]
            exact.subtract(Counter({(home, b, jb): 1 for b, jb in gk}))
            add(exact, s, m)
    fix_int = np.array(rows, np.int64).reshape(-1, 5)
    return fix_int, np.array(coefs, np.float64)
