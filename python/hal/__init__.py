"""hal: one API to find, choose and drive the compute devices of a machine.

The CPU, every OpenCL device, NVIDIA GPUs through CUDA and vendor plugins, through one set of
devices, streams, tensors and ops; tensors cross to NumPy and PyTorch without copies (DLPack).
See docs/python.md for the whole API.
"""

import sys as _sys

from . import _hal
from ._hal import *  # noqa: F401,F403  (the names __all__ lists below)
from ._hal import __version__, from_dlpack, optim  # noqa: F401

# `import hal.optim` and `from hal.optim import SGD` find the extension's submodule.
_sys.modules[__name__ + ".optim"] = optim


def from_numpy(array):
    """A hal.Tensor over a NumPy array's memory, without a copy (the CPU's): hal.from_dlpack."""
    return from_dlpack(array)


# Names that would shadow Python's built-ins (bool, abs, max, min, pow, round, sum) stay out of
# `from hal import *`; hal.max and the others are still there.
_BUILTINS = {"bool", "abs", "max", "min", "pow", "round", "sum"}
__all__ = sorted(
    name
    for name in dir(_hal)
    if not name.startswith("_") and name not in _BUILTINS
) + ["from_numpy"]
