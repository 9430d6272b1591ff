"""numba compilers for the kernels that allocate nothing: no reference counting, no aliasing.

numba counts references on every array it passes around: at each call that is not
inlined, at each read of an array out of a bundle (a NamedTuple), at each rebinding. In
the per-frame loops those updates were a quarter of the kernels' time (``perf``: the lane
kernel spent 13 % of a run in ``NRT_incref``/``NRT_decref``). A kernel that allocates
nothing needs none of them: its arrays are kept alive by the Python caller that passed
them, for as long as the call lasts. A helper that does allocate (``kabsch_start``'s SVD)
is compiled with :data:`ALLOCATING_JIT`: numba compiles a function called from a kernel
with the kernel's ``nrt`` unless the function sets its own, so it must say so.

``flags.nrt`` and ``flags.noalias`` are numba's own compiler flags (not public API), so the
numba pin in ``pyproject.toml`` matters: a kernel compiled with ``nrt`` off fails to
compile, loudly, if it allocates.
"""

from __future__ import annotations

from numba.core.compiler import Compiler

from pipeline.solve.rules import JIT

__all__ = [
    "ALLOCATING_JIT",
    "NOALIAS_JIT",
    "NOREFCOUNT_JIT",
    "NoAliasCompiler",
    "NoRefcountCompiler",
]


class NoRefcountCompiler(Compiler):
    """numba's compiler with reference counting off (``flags.nrt``).

    For kernels that allocate nothing (see the module's docstring).
    """

    def __init__(self, typingctx, targetctx, library, args, return_type, flags, locals):
        flags = flags.copy()
        self._set_flags(flags)
        super().__init__(typingctx, targetctx, library, args, return_type, flags, locals)

    @staticmethod
    def _set_flags(flags) -> None:
        flags.nrt = False


class NoAliasCompiler(NoRefcountCompiler):
    """:class:`NoRefcountCompiler` with the function's array arguments marked ``noalias``.

    Without it the compiler must assume that any two of the lane loop's arrays may
    overlap, and vectorizes a loop over the lanes only behind run-time overlap checks, or
    not at all when a loop touches many arrays. The lane kernel's arrays never overlap:
    each is allocated on its own (:func:`.lane_bundles.lane_workspace`).
    """

    @staticmethod
    def _set_flags(flags) -> None:
        flags.nrt = False
        flags.noalias = True


#: :data:`~pipeline.solve.rules.JIT` for a kernel that allocates nothing.
NOREFCOUNT_JIT = {**JIT, "pipeline_class": NoRefcountCompiler}
#: :data:`NOREFCOUNT_JIT` for a kernel whose arrays also never overlap (the lanes).
NOALIAS_JIT = {**JIT, "pipeline_class": NoAliasCompiler}
#: :data:`~pipeline.solve.rules.JIT` for a helper that allocates, called from those kernels.
ALLOCATING_JIT = {**JIT, "_nrt": True}
