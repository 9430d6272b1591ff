"""The numpy engine: frames in lockstep lanes of numpy calls (every mapper).

Files mirror :mod:`pipeline.solve.compiled`: ``frames`` (the iteration loop),
``forward`` (forward pass and objective), ``normal`` (normal equations and their
elimination; ``moments`` assembles them for 3D observations), ``pose`` (clamp, step,
starts, diagnostics), ``tables`` (index tables of the model); ``linalg`` holds the batched
dense solves. :mod:`pipeline.solve.solver` dispatches to it.
"""

from pipeline.solve.numpy.frames import frames_in_lanes, sequence_in_lanes

__all__ = ["frames_in_lanes", "sequence_in_lanes"]
