"""hal: one API to find, choose and drive the compute devices of a machine.

The CPU, every OpenCL device, NVIDIA GPUs through CUDA and vendor plugins, through one set of
devices, streams, tensors and ops; tensors cross to NumPy and PyTorch without copies (DLPack).
See docs/python.md for the whole API.
"""

import functools as _functools
import inspect as _inspect
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


def _in_grad_mode(function, enabled):
    """What `@hal.no_grad()` and `@hal.enable_grad()` make of a function: each call in a scope of
    its own; a generator function's body too, each time it resumes (as PyTorch's decorators)."""
    scope = enable_grad if enabled else no_grad  # noqa: F405 (from _hal)

    if _inspect.isgeneratorfunction(function):

        @_functools.wraps(function)
        def generator(*args, **kwargs):
            inner = function(*args, **kwargs)
            try:
                with scope():
                    value = next(inner)
                while True:
                    try:
                        sent = yield value
                    except GeneratorExit:
                        with scope():
                            inner.close()
                        raise
                    except BaseException as error:  # thrown into this one: into the inner one
                        with scope():
                            value = inner.throw(error)
                    else:
                        with scope():
                            value = inner.send(sent)
            except StopIteration as stop:
                return stop.value

        return generator

    @_functools.wraps(function)
    def call(*args, **kwargs):
        with scope():
            return function(*args, **kwargs)

    return call
