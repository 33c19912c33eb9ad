"""The 16-bit and unsigned integer dtypes (i16, u16, u32, u64) against NumPy: round trips,
wrapping arithmetic, comparisons, casts, reductions and DLPack, on every device that holds them."""

import numpy as np
import pytest

import hal
from conftest import runs

NEW = ["i16", "u16", "u32", "u64"]
NUMPY = {"i16": np.int16, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64}


def holds(device, dtype):
    if not device.supports(dtype):
        pytest.skip(f"{device.id} holds no {dtype} tensors (its dtypes: {device.dtypes})")


def edges(dtype):
    """Each type's extremes beside small numbers."""
    info = np.iinfo(NUMPY[dtype])
    return np.array([info.min, info.max, 0, 1, 2, 7, info.max - 1, info.min + 3], NUMPY[dtype])


@pytest.mark.parametrize("dtype", NEW)
def test_round_trips_numpy_exactly(device, dtype):
    holds(device, dtype)
    values = edges(dtype).reshape(2, 4)
    x = hal.tensor(values, device=device)
    assert x.dtype == hal.dtype(dtype)
    assert x.numpy().dtype == values.dtype
    np.testing.assert_array_equal(x.numpy(), values)
    np.testing.assert_array_equal(x.transpose(0, 1).contiguous().numpy(), values.T)


@pytest.mark.parametrize("dtype", NEW)
def test_arithmetic_wraps_as_numpy_does(device, dtype):
    holds(device, dtype)
    if not runs(device, "add", dtype):
        pytest.skip(f"{device.id} runs no add in {dtype}")
    a = edges(dtype)
    b = np.roll(a, 3)
    x, y = hal.tensor(a, device=device), hal.tensor(b, device=device)
    with np.errstate(over="ignore"):
        for op, want in [("add", a + b), ("sub", a - b), ("mul", a * b),
                         ("maximum", np.maximum(a, b)), ("minimum", np.minimum(a, b))]:
            got = getattr(hal, op)(x, y)
            assert got.dtype == hal.dtype(dtype), op
            np.testing.assert_array_equal(got.numpy(), want, err_msg=op)
    # Division truncates toward zero (as in C and PyTorch), and by zero gives 0.
    def truncated(p, q):
        if q == 0:
            return 0
        quotient = abs(p) // abs(q)
        return quotient if (p < 0) == (q < 0) else -quotient

    want = [truncated(p, q) for p, q in zip(a.tolist(), b.tolist())]
    with np.errstate(over="ignore"):  # MIN / -1 wraps
        want = np.array(want, dtype=np.int64 if dtype != "u64" else np.uint64).astype(NUMPY[dtype])
    np.testing.assert_array_equal(hal.div(x, y).numpy(), want)
    for op, want in [("eq", a == b), ("lt", a < b), ("ge", a >= b)]:
        np.testing.assert_array_equal(getattr(hal, op)(x, y).numpy(), want, err_msg=op)


def test_signed_functions_of_i16(device):
    holds(device, "i16")
    a = edges("i16")
    x = hal.tensor(a, device=device)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(hal.neg(x).numpy(), -a)
        np.testing.assert_array_equal(hal.abs(x).numpy(), np.abs(a))  # -32768 wraps to itself
    np.testing.assert_array_equal(hal.relu(x).numpy(), np.maximum(a, 0))


def test_mixed_operands_promote_as_numpy_does(device):
    pairs = [(np.uint8, np.int8), (np.uint16, np.int16), (np.uint32, np.int8),
             (np.uint64, np.uint8), (np.int16, np.uint8), (np.uint32, np.uint16)]
    for a_type, b_type in pairs:
        a_dtype, b_dtype = hal.dtype(a_type), hal.dtype(b_type)
        if not (device.supports(a_dtype) and device.supports(b_dtype)):
            continue
        want_dtype = hal.dtype(np.promote_types(a_type, b_type))
        if not runs(device, "add", want_dtype):
            continue
        a = np.arange(1, 7).astype(a_type)
        b = np.arange(0, 6).astype(b_type)
        got = hal.add(hal.tensor(a, device=device), hal.tensor(b, device=device))
        assert got.dtype == want_dtype, (a_type, b_type)
        np.testing.assert_array_equal(got.numpy(), a + b)


def test_casts_saturate_floats_and_keep_u64_past_int64(device):
    holds(device, "u64")
    big = np.array([2**64 - 1, 2**63 + 2**40 + 1, 5, 0], np.uint64)
    x = hal.tensor(big, device=device)
    np.testing.assert_array_equal(hal.cast(x, "f64").numpy(), big.astype(np.float64))
    np.testing.assert_array_equal(hal.cast(x, "f32").numpy(), big.astype(np.float32))
    # Integers wrap into narrower ones, as NumPy's astype does.
    np.testing.assert_array_equal(hal.cast(x, "u16").numpy(), big.astype(np.uint16))
    np.testing.assert_array_equal(hal.cast(x, "i64").numpy(), big.astype(np.int64))
    # Floats saturate at the range and NaN gives 0 (hal's rule, where NumPy's is undefined).
    floats = hal.tensor(np.array([-1.5, 70000.0, np.nan, 300.7, 1e30], np.float32), device=device)
    assert hal.cast(floats, "u16").numpy().tolist() == [0, 65535, 0, 300, 65535]
    assert hal.cast(floats, "i16").numpy().tolist() == [-1, 32767, 0, 300, 32767]
    assert hal.cast(floats, "u32").numpy().tolist() == [0, 70000, 0, 300, 2**32 - 1]
    assert hal.cast(floats, "u64").numpy().tolist() == [0, 70000, 0, 300, 2**64 - 1]


@pytest.mark.parametrize("dtype", NEW)
def test_reductions_match_numpy(device, dtype, rng):
    holds(device, dtype)
    if not runs(device, "max", dtype):
        pytest.skip(f"{device.id} runs no max in {dtype}")
    info = np.iinfo(NUMPY[dtype])
    a = rng.integers(max(info.min, -1000), min(info.max, 60000), size=(37, 41)).astype(NUMPY[dtype])
    x = hal.tensor(a, device=device)
    for axis in (0, 1):
        np.testing.assert_array_equal(hal.max(x, axis).numpy(), a.max(axis))
        np.testing.assert_array_equal(hal.min(x, axis).numpy(), a.min(axis))
        np.testing.assert_array_equal(hal.argmax(x, axis).numpy(), a.argmax(axis))
        total = hal.sum(x, axis)
        # Sums of integers count in i64 (PyTorch's rule), u64's in u64.
        assert total.dtype == (hal.u64 if dtype == "u64" else hal.i64)
        np.testing.assert_array_equal(total.numpy(), a.astype(np.int64).sum(axis))


def test_u64_sums_past_int64_exactly(device):
    holds(device, "u64")
    if not runs(device, "sum", "u64"):
        pytest.skip(f"{device.id} runs no sum in u64")
    a = np.array([2**63, 2**62, 12345, 2**62 + 7], np.uint64)
    assert hal.sum(hal.tensor(a, device=device)).numpy().tolist() == 2**63 + 2**63 + 12352 - 2**64
    b = np.array([2**63, 2**62, 5], np.uint64)
    assert hal.sum(hal.tensor(b, device=device)).numpy().tolist() == 2**63 + 2**62 + 5


def test_full_of_u64_past_int64_is_exact(cpu):
    x = hal.full((3,), 2**64 - 2, dtype="u64", device=cpu)
    assert x.numpy().tolist() == [2**64 - 2] * 3
    with pytest.raises(hal.InvalidArgument, match="u64"):
        hal.full((1,), -1, dtype="u64", device=cpu)


@pytest.mark.parametrize("dtype", NEW)
def test_dlpack_both_ways(cpu, dtype):
    values = edges(dtype)
    from_numpy = hal.from_dlpack(values)
    assert from_numpy.dtype == hal.dtype(dtype)
    np.testing.assert_array_equal(from_numpy.numpy(), values)
    to_numpy = np.from_dlpack(hal.tensor(values, device=cpu))
    assert to_numpy.dtype == values.dtype
    np.testing.assert_array_equal(to_numpy, values)


def test_a_device_without_the_dtype_refuses_its_ops_by_name():
    # Memory is bytes, so any device stores the tensor; its ops are refused naming the op, the
    # dtype and the device, and run on the CPU where fallback is allowed.
    for d in hal.devices():
        for dtype in NEW:
            if d.supports(dtype) or runs(d, "add", dtype):
                continue
            x = hal.tensor(np.array([1, 2, 3], NUMPY[dtype]), device=d)
            with hal.cpu_fallback(False):
                with pytest.raises(hal.Unsupported, match=f"add.*{dtype}.*{d.id}"):
                    hal.add(x, x)
            with hal.cpu_fallback():
                assert hal.add(x, x).numpy().tolist() == [2, 4, 6]
            return
    pytest.skip("every visible device runs add in i16, u16, u32 and u64")
