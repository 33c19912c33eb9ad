"""PyTorch and hal share tensors through DLPack without copies on the CPU (checked by address),
both through torch.from_dlpack / __dlpack__ and torch.utils.dlpack's capsules, whichever side
lets go first. Skipped, saying why, where PyTorch is not installed."""

import gc

import numpy as np
import pytest

import hal

DTYPES = ["float32", "float16", "bfloat16", "float64", "int8", "uint8", "int32", "int64"]


def test_hal_tensor_into_torch_without_a_copy(torch, cpu):
    t = hal.arange(6, dtype="f32", device=cpu).reshape(2, 3)
    for consume in (torch.from_dlpack, lambda x: torch.utils.dlpack.from_dlpack(x.__dlpack__())):
        tt = consume(t)
        assert tt.data_ptr() == t.data_ptr()
        assert tuple(tt.shape) == (2, 3) and tt.dtype == torch.float32
        assert tt.tolist() == [[0, 1, 2], [3, 4, 5]]


def test_torch_tensor_into_hal_without_a_copy(torch, cpu):
    tt = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    for t in (hal.from_dlpack(tt), hal.from_dlpack(torch.utils.dlpack.to_dlpack(tt))):
        assert t.data_ptr() == tt.data_ptr() and t.device == cpu
        assert t.shape == (3, 4) and t.strides == (4, 1)
    strided = hal.from_dlpack(tt.t())
    assert strided.strides == (1, 4) and strided.data_ptr() == tt.data_ptr()
    np.testing.assert_array_equal(strided.numpy(), tt.t().numpy())


def test_hal_tensor_of_a_torch_tensor_keeps_its_dtype(torch, cpu):
    value = 0.1 + 1e-12  # not an f32
    t = hal.tensor(torch.tensor([value], dtype=torch.float64), device=cpu)
    assert t.dtype == hal.f64 and t.numpy()[0] == np.float64(value)
    assert hal.tensor(torch.tensor([1, 2], dtype=torch.int32), device=cpu).dtype == hal.i32
    # bf16, which NumPy cannot read (TypeError before): through f32, exactly.
    if cpu.supports("bf16"):
        halves = torch.tensor([1.5, -0.0078125, 3e38], dtype=torch.bfloat16, requires_grad=True)
        t = hal.tensor(halves, device=cpu)
        assert t.dtype == hal.bf16
        assert t.to("f32").numpy().tolist() == halves.detach().float().tolist()
        assert hal.tensor(halves, dtype="f32", device=cpu).dtype == hal.f32
        parameter = torch.nn.Parameter(halves.detach())  # of module torch.nn.parameter
        assert hal.tensor(parameter, device=cpu).dtype == hal.bf16


@pytest.mark.parametrize("name", DTYPES)
def test_every_dtype_both_ways(torch, cpu, name):
    dtype = getattr(torch, name)
    tt = (torch.arange(8) % 5).to(dtype)
    t = hal.from_dlpack(tt)
    assert str(t.dtype) == str(hal.dtype(name))
    back = torch.from_dlpack(t)
    assert back.dtype == dtype and back.data_ptr() == tt.data_ptr()
    assert torch.equal(back, tt)


def test_torch_may_let_go_first(torch, cpu):
    tt = torch.linspace(-1, 1, 16)
    expected = tt.clone()
    t = hal.from_dlpack(tt)
    del tt
    gc.collect()
    torch.zeros(1 << 16)  # reuse the freed memory, if any was freed
    np.testing.assert_array_equal(t.numpy(), expected.numpy())
    np.testing.assert_allclose((t * 2).numpy(), (expected * 2).numpy())


def test_hal_may_let_go_first(torch, cpu):
    t = hal.normal((16,), seed=3, device=cpu)
    expected = t.numpy().copy()
    tt = torch.from_dlpack(t)
    del t
    gc.collect()
    hal.zeros((1 << 16,), device=cpu).numpy()
    np.testing.assert_array_equal(tt.numpy(), expected)


def test_hal_ops_on_torch_memory_match_torch(torch, cpu):
    a, b = torch.randn(4, 8), torch.randn(4, 8)
    c = torch.from_dlpack(hal.add(hal.from_dlpack(a), hal.from_dlpack(b)))
    assert torch.allclose(c, torch.add(a, b))
    w = torch.randn(8, 3)
    m = torch.from_dlpack(hal.from_dlpack(a) @ hal.from_dlpack(w))
    assert torch.allclose(m, a @ w, atol=1e-5)


def test_capsules_are_consumed_once_on_both_sides(torch, cpu):
    capsule = hal.ones((3,), device=cpu).__dlpack__()
    torch.utils.dlpack.from_dlpack(capsule)
    with pytest.raises(RuntimeError):
        torch.utils.dlpack.from_dlpack(capsule)
    with pytest.raises(hal.InvalidArgument, match="consumed already"):
        hal.from_dlpack(capsule)
    theirs = torch.utils.dlpack.to_dlpack(torch.ones(3))
    hal.from_dlpack(theirs)
    with pytest.raises(hal.InvalidArgument, match="consumed already"):
        hal.from_dlpack(theirs)


def test_torch_reads_only_contiguous_hal_tensors(torch, cpu):
    t = hal.zeros((2, 3), device=cpu).transpose(0, 1)
    with pytest.raises(BufferError, match="not contiguous"):
        torch.from_dlpack(t)
