# Type stub of hal.optim (the extension module's submodule hal._hal.optim): optimizers with
# PyTorch's update rules over hal tensors, updating them in place. docs/python.md, "Training",
# describes them. A parameter that is no contiguous leaf requiring grad, one given twice, or an
# empty list is hal.InvalidArgument naming it; a step on a stream of another device than a
# parameter's is hal.InvalidArgument.
from collections.abc import Iterable, Mapping
from typing import TypeAlias

from hal import Stream, Tensor

_Parameters: TypeAlias = Iterable[Tensor] | Iterable[tuple[str, Tensor]] | Mapping[str, Tensor]

class Optimizer:
    def step(self, stream: Stream | None = None) -> None: ...
    def zero_grad(self) -> None: ...
    @property
    def lr(self) -> float: ...
    @lr.setter
    def lr(self, value: float) -> None: ...  # hal.InvalidArgument unless finite and >= 0
    @property
    def steps(self) -> int: ...
    @property
    def parameters(self) -> list[tuple[str, Tensor]]: ...

class SGD(Optimizer):
    def __init__(
        self,
        params: _Parameters,
        lr: float = 0.01,
        momentum: float = 0.0,
        dampening: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
    ) -> None: ...

class AdamW(Optimizer):
    def __init__(
        self,
        params: _Parameters,
        lr: float = 0.001,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-08,
        weight_decay: float = 0.01,
    ) -> None: ...

def clip_grad_norm_(
    parameters: _Parameters, max_norm: float, stream: Stream | None = None
) -> Tensor: ...
