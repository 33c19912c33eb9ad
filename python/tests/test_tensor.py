"""Tensors: from NumPy and back on every device in every dtype, properties, views and indexing
against NumPy's, copies between devices and dtypes, the creation functions."""

import numpy as np
import pytest

import hal
from conftest import DEVICES, assert_close

NUMPY_DTYPES = ["float32", "float16", "float64", "int8", "uint8", "int32", "int64", "bool"]


def sample(dtype, shape=(3, 4), seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.startswith(("int", "uint")):
        return rng.integers(0, 100, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_numpy_round_trip_in_every_dtype(device, dtype):
    if not device.supports(dtype):
        pytest.skip(f"{device.id} has no {dtype}")
    array = sample(dtype)
    t = hal.tensor(array, device=device)
    assert t.device == device
    assert str(t.dtype) == str(hal.dtype(dtype))
    assert t.shape == (3, 4) and t.ndim == 2 and t.numel() == 12 and len(t) == 3
    back = t.numpy()
    assert back.dtype == array.dtype
    np.testing.assert_array_equal(back, array)


def test_python_numbers_become_f32_and_i64_as_in_pytorch(cpu):
    assert hal.tensor([1.5, 2.5], device=cpu).dtype == hal.f32
    assert hal.tensor([1, 2], device=cpu).dtype == hal.i64
    assert hal.tensor([True], device=cpu).dtype == hal.bool
    assert hal.tensor(np.zeros(2), device=cpu).dtype == hal.f64  # an array keeps its dtype
    assert hal.tensor([1, 2], dtype="f16", device=cpu).numpy().dtype == np.float16


def test_what_carries_a_dtype_keeps_it(cpu):
    # Only Python floats (alone or in lists) default to f32; a value with a dtype of its own
    # keeps it, and with it its precision.
    x = 0.1 + 1e-12
    for data in (np.float64(x), np.array([x]), hal.tensor(np.array([x]), device=cpu)):
        t = hal.tensor(data, device=cpu)
        assert t.dtype == hal.f64, type(data)
        assert t.numpy().reshape(-1)[0] == np.float64(x)
    assert hal.tensor(np.float32(x), device=cpu).dtype == hal.f32
    assert hal.tensor(np.int32(3), device=cpu).dtype == hal.i32
    assert hal.tensor(x, device=cpu).dtype == hal.f32
    assert hal.tensor((x, 1.0), device=cpu).dtype == hal.f32
    if cpu.supports("bf16"):  # NumPy would read it as float32
        assert hal.tensor(hal.ones((2,), dtype="bf16", device=cpu), device=cpu).dtype == hal.bf16


def test_a_dtype_asked_for_converts_from_the_arrays_own(cpu):
    assert hal.tensor(np.array([1, -2], np.int16), dtype="i32", device=cpu).numpy().tolist() == [1, -2]
    assert hal.tensor(np.array([1, 2], np.uint32), dtype="i64", device=cpu).numpy().tolist() == [1, 2]
    big_endian = np.array([1.5, -2], ">f4")
    assert hal.tensor(big_endian, dtype="f32", device=cpu).numpy().tolist() == [1.5, -2]
    # What is no real number is refused, dtype or not (complex lost its imaginary part).
    with pytest.raises(hal.Unsupported, match="complex"):
        hal.tensor(np.array([1 + 2j]), dtype="f32", device=cpu)
    # Another byte order is the same numbers, in the same dtype.
    assert hal.tensor(big_endian, device=cpu).dtype == hal.f32
    assert hal.tensor(big_endian, device=cpu).numpy().tolist() == [1.5, -2]


def test_a_dtype_asked_for_converts_by_hals_cast_not_numpys(device):
    # NumPy's astype wraps floats into integers (NaN, 1e20, -1e20 and 3e9 all became
    # -2147483648 in i32) and reached bf16 through float32, rounding twice; hal's cast saturates,
    # takes NaN to 0 and rounds once: hal.tensor(x, dtype) is hal.tensor(x).to(dtype).
    x = [float("nan"), 1e20, -1e20, 3e9, 300.7, -1.5]
    cpu = hal.device("cpu:0")
    for dtype, want in [("i32", [0, 2**31 - 1, -(2**31), 2**31 - 1, 300, -1]),
                        ("u8", [0, 255, 0, 255, 255, 0]),
                        ("i8", [0, 127, -128, 127, 127, -1]),
                        ("i64", [0, 2**63 - 1, -(2**63), 3 * 10**9, 300, -1])]:
        got = hal.tensor(x, dtype=dtype, device=device).numpy().tolist()
        assert got == want, dtype
        assert got == hal.tensor(np.array(x), device=cpu).to(dtype).numpy().tolist(), dtype
    # 1 + 2^-8 + 2^-30 is above bf16's tie between 1 and 1 + 2^-7; float32 rounds it to the tie
    # itself, which rounds to even (1.0).
    above_tie = 1 + 2**-8 + 2**-30
    bf16 = hal.tensor([above_tie], dtype="bf16", device=device)
    assert bf16.dtype == hal.bf16 and bf16.numpy().tolist() == [1.0078125]
    assert hal.full((1,), above_tie, dtype="bf16", device=cpu).numpy().tolist() == [1.0078125]
    # Integers past 2^53 stay exact in i64; uint64 past int64 wraps into i64 as hal's narrowing
    # casts wrap, and reaches floats rounded once.
    assert hal.tensor([2**62 + 1], dtype="i64", device=device).numpy().tolist() == [2**62 + 1]
    beyond = np.array([2**64 - 1, 5], np.uint64)
    assert hal.tensor(beyond, dtype="i64", device=device).numpy().tolist() == [-1, 5]
    assert hal.tensor(beyond, dtype="f32", device=device).numpy().tolist() == [2.0**64, 5.0]
    # Arrays go over in their own dtype (another byte order as this machine's), then cast by
    # hal: an integer into a narrower one wraps, a float into one saturates.
    assert hal.tensor(np.array([-300, 7], np.int16), dtype="u8",
                      device=device).numpy().tolist() == [212, 7]
    assert hal.tensor(np.array([-3.5, 1e9], ">f8"), dtype="u8",
                      device=device).numpy().tolist() == [0, 255]


def test_bf16_reads_back_on_every_device(device):
    # bf16 is widened to float32 on the host from its bits: a device without a bf16 cast
    # (Vulkan) still gives its elements, strided views included.
    values = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
    t = hal.tensor(values, dtype="bf16", device=device)
    assert t.dtype == hal.bf16
    np.testing.assert_array_equal(t.numpy(), values)
    np.testing.assert_array_equal(t.transpose(0, 1).numpy(), values.T)
    assert t[1, 2].item() == 2.5


def test_arange_of_ints_past_2_53_is_exact(cpu):
    start = 2**53 + 1
    for args, kwargs in [((start, start + 2), {}), ((start + 7, start, -3), {}),
                         ((-start, -start + 4, 3), {}), ((2**62, 2**62 + 10, 4), {}),
                         ((start, start + 2), dict(dtype="i64"))]:
        got = hal.arange(*args, device=cpu, **kwargs)
        want = np.arange(*args, dtype=np.int64)
        assert got.dtype == hal.i64
        assert got.numpy().tolist() == want.tolist(), args
    assert hal.arange(start, start, device=cpu).shape == (0,)
    with pytest.raises(hal.InvalidArgument, match="step must not be 0"):
        hal.arange(start, start + 2, 0, device=cpu)
    with pytest.raises(hal.OutOfRange, match="fit in i64"):
        hal.arange(2**63, 2**63 + 2, device=cpu)
    # A narrower dtype holds none of them: refused, not wrapped ([1, 2] before).
    with pytest.raises(hal.InvalidArgument, match="i32"):
        hal.arange(start, start + 2, dtype="i32", device=cpu)
    with pytest.raises(hal.OutOfMemory, match="do not fit the host's memory"):
        hal.arange(0, 2**62, device=cpu)
    with pytest.raises(hal.InvalidArgument, match="'a' is not a number"):
        hal.arange("a", device=cpu)


def test_zero_d_data_makes_a_zero_d_tensor(cpu):
    array = np.array(3.0)
    t = hal.tensor(array, device=cpu)
    assert t.shape == array.shape == () and t.dtype == hal.f64 and t.item() == 3.0
    scalar = hal.tensor(5.0, device=cpu)
    assert scalar.shape == () and scalar.dtype == hal.f32
    assert np.asarray(scalar).shape == () and scalar.item() == 5.0
    assert hal.tensor(np.int64(7), device=cpu).shape == ()
    zero_d = np.zeros((), dtype=np.float32)
    for result in (hal.zeros((), device=cpu) + np.array(2.0, np.float32),
                   np.array(2.0, np.float32) + hal.zeros((), device=cpu),
                   hal.add(hal.zeros((), device=cpu), np.array(2.0, np.float32))):
        expected = zero_d + np.array(2.0, np.float32)
        assert result.shape == expected.shape == ()
        np.testing.assert_array_equal(result.numpy(), expected)


def test_truth_value_and_numbers_of_one_element(cpu):
    for values in ([0.0], [2.5], [-0.0], [True], [False], [0]):
        array = np.array(values)
        t = hal.tensor(array, device=cpu)
        assert bool(t) is bool(array), values
        assert float(t) == float(array[0]) and int(t) == int(array[0])
    assert bool(hal.zeros((), device=cpu)) is False
    assert not (hal.tensor([1.0], device=cpu) == hal.tensor([2.0], device=cpu))
    assert int(hal.tensor([-2.7], device=cpu)) == int(np.float32(-2.7)) == -2
    assert int(hal.tensor([2**62 + 1], device=cpu)) == 2**62 + 1
    t = hal.tensor([1.0, 2.0], device=cpu)
    assert (2.0 in t) is True and (-999.0 in t) is False  # `in` compares element by element
    with pytest.raises(hal.InvalidArgument,
                       match="truth value of a tensor of 2 elements is ambiguous"):
        bool(t)
    with pytest.raises(hal.InvalidArgument, match="of 0 elements is ambiguous"):
        bool(hal.zeros((0,), device=cpu))
    with pytest.raises(hal.InvalidArgument, match=r"float\(\) of f32\[2\].*one element"):
        float(t)
    with pytest.raises(hal.InvalidArgument, match=r"int\(\) of f32\[2\].*one element"):
        int(t)


def test_bf16_goes_through_f32(device):
    if not device.supports("bf16"):
        pytest.skip(f"{device.id} has no bf16")
    values = np.array([1.0, -2.5, 0.15625, 3e4], dtype=np.float32)
    t = hal.tensor(values, dtype="bf16", device=device)
    assert t.dtype == hal.bf16 and t.itemsize == 2
    assert_close(t.numpy(), values, "bf16")  # NumPy has no bf16: float32 comes back


def test_numpy_of_a_cpu_tensor_shares_its_memory(cpu):
    t = hal.arange(6, dtype="f32", device=cpu)
    view = t.numpy()
    assert view.__array_interface__["data"][0] == t.data_ptr()
    view[0] = 42.0
    assert t.numpy()[0] == 42.0
    del t  # the array keeps the storage alive
    assert view.tolist() == [42.0, 1, 2, 3, 4, 5]


def test_properties_and_python_protocols(cpu):
    t = hal.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), device=cpu)
    assert t.strides == (3, 1) and t.offset == 0 and t.is_contiguous()
    assert t.size() == (2, 3) and t.size(1) == 3 and t.dim() == 2
    assert t.nbytes == 24 and t.itemsize == 4
    assert repr(t) == "hal.Tensor(f32[2, 3] on cpu:0)"
    assert np.asarray(t).tolist() == [[0, 1, 2], [3, 4, 5]]
    assert np.asarray(t, dtype=np.int64).dtype == np.int64
    assert t.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert t[1, 2].item() == 5.0
    with pytest.raises(hal.InvalidArgument, match="one element"):
        t.item()
    with pytest.raises(hal.InvalidArgument, match="0-d"):
        len(t[0, 0])


def test_views_match_numpy_and_copy_nothing(device):
    array = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = hal.tensor(array, device=device)
    cases = [
        (t.reshape(4, 6), array.reshape(4, 6)),
        (t.reshape((-1, 4)), array.reshape(-1, 4)),
        (t.view(24), array.reshape(24)),
        (t.transpose(0, 2), array.transpose(2, 1, 0)),
        (t.permute(1, 2, 0), array.transpose(1, 2, 0)),
        (t.slice(2, 1, 4, 2), array[:, :, 1:4:2]),
        (t.unsqueeze(1), array[:, None]),
        (t[:1].squeeze(0), array[0]),
        (t.slice(1, 0, 1).expand(2, 5, 4), np.broadcast_to(array[:, :1], (2, 5, 4))),
    ]
    for view, expected in cases:
        np.testing.assert_array_equal(view.numpy(), expected)
    assert not t.transpose(0, 2).is_contiguous()
    with pytest.raises(hal.InvalidArgument):
        t.transpose(0, 2).view(24)


@pytest.mark.parametrize(
    "key",
    [1, -1, (0, 2), slice(1, None), (slice(None), 1), (Ellipsis, 2), (None, 0),
     (slice(0, 3, 2), Ellipsis, slice(1, 3)), (1, None, slice(None, None, 3)),
     # A bool is a new axis of 1 or 0 elements, not the int 1 or 0 (it was read as one).
     True, False, (0, True), (Ellipsis, False), (np.True_, 1), (None, False, 2)],
)
def test_indexing_matches_numpy(cpu, key):
    array = np.arange(60, dtype=np.int32).reshape(3, 4, 5)
    t = hal.tensor(array, device=cpu)
    assert t[key].shape == array[key].shape
    np.testing.assert_array_equal(t[key].numpy(), array[key])


def test_bad_indices_name_the_problem(cpu):
    t = hal.zeros((3, 4), device=cpu)
    with pytest.raises(hal.OutOfRange, match="out of range for dimension 1"):
        t[0, 4]
    with pytest.raises(hal.OutOfRange, match="3 indices for 2 dimensions"):
        t[0, 0, 0]
    with pytest.raises(hal.InvalidArgument, match="step forward"):
        t[::-1]
    with pytest.raises(hal.InvalidArgument, match="more than one Ellipsis"):
        t[..., ...]
    with pytest.raises(hal.InvalidArgument, match="not an int, a slice"):
        t["a"]


def test_copies_between_every_pair_of_devices():
    array = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    for source in DEVICES:
        t = hal.tensor(array, device=source)
        for target in DEVICES:
            moved = t.to(target)
            assert moved.device == target
            np.testing.assert_array_equal(moved.numpy(), array)
            strided = t.transpose(0, 1).to(target.id)
            np.testing.assert_array_equal(strided.numpy(), array.T)
        np.testing.assert_array_equal(t.cpu().numpy(), array)


def test_to_a_dtype_casts(device):
    t = hal.tensor(np.array([1.7, -2.2, 3.5], dtype=np.float32), device=device)
    if not hal.supports_op(device, "cast", "f32"):
        with pytest.raises(hal.Unsupported):
            t.to("i32")
        return
    assert t.to("i32").numpy().tolist() == [1, -2, 3]
    assert t.to(hal.f64).dtype == hal.f64
    assert t.cast(np.int64).numpy().tolist() == [1, -2, 3]


def test_contiguous_packs_a_strided_view(device):
    array = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = hal.tensor(array, device=device).transpose(0, 1)
    packed = t.contiguous()
    assert packed.is_contiguous() and packed.strides == (3, 1)
    np.testing.assert_array_equal(packed.numpy(), array.T)
    same = hal.tensor(array, device=device)
    assert same.contiguous().data_ptr() == same.data_ptr() if device.backend == "cpu" else True


def test_creation_functions(device):
    np.testing.assert_array_equal(hal.zeros((2, 3), device=device).numpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(hal.ones(4, dtype="i32", device=device).numpy(), np.ones(4))
    np.testing.assert_array_equal(
        hal.full((2,), 7.5, dtype=hal.f64 if device.supports("f64") else hal.f32,
                 device=device).numpy(), [7.5, 7.5])
    np.testing.assert_array_equal(hal.arange(5, device=device).numpy(), np.arange(5))
    np.testing.assert_array_equal(
        hal.arange(1, 2, 0.25, dtype="f32", device=device).numpy(), np.arange(1, 2, 0.25))
    assert hal.empty((3, 2), dtype="u8", device=device).shape == (3, 2)
    assert hal.zeros((0, 3), device=device).numpy().shape == (0, 3)
    with pytest.raises(hal.InvalidArgument, match="step"):
        hal.arange(0, 1, 0, device=device)


def test_full_fills_integers_exactly(cpu):
    for value in (2**63 - 1, -2**63, 2**53 + 1, np.int64(2**62 + 3)):
        t = hal.full((2, 3), value, dtype="i64", device=cpu)
        np.testing.assert_array_equal(t.numpy(), np.full((2, 3), value, dtype=np.int64))
    assert hal.full((2,), np.float32(1.5), device=cpu).numpy().tolist() == [1.5, 1.5]
    assert hal.full((2,), True, dtype="i32", device=cpu).numpy().tolist() == [1, 1]
    assert hal.full((1,), 2**64 - 1, dtype="u64", device=cpu).numpy().tolist() == [2**64 - 1]
    # Rounded once into f32: just above the tie between 2**60 and 2**60 + 2**37 (a double
    # between would round onto the tie, and then to even).
    assert hal.full((1,), 2**60 + 2**36 + 1, dtype="f32", device=cpu).numpy().tolist() == [
        2**60 + 2**37]
    with pytest.raises(hal.InvalidArgument, match="9223372036854775808 is not a value of i64"):
        hal.full((1,), 2**63, dtype="i64", device=cpu)
    with pytest.raises(hal.InvalidArgument, match="'seven' is not a number"):
        hal.full((1,), "seven", device=cpu)


def test_random_numbers_are_the_same_on_every_device():
    reference = hal.uniform((64,), seed=7, low=-1, high=1, device="cpu:0").numpy()
    normal = hal.normal((64,), seed=7, mean=2, stddev=3, device="cpu:0").numpy()
    assert reference.min() >= -1 and reference.max() < 1
    assert abs(normal.mean() - 2) < 1.5
    for device in DEVICES:
        np.testing.assert_array_equal(
            hal.uniform((64,), seed=7, low=-1, high=1, device=device).numpy(), reference)
        assert_close(hal.normal((64,), seed=7, mean=2, stddev=3, device=device).numpy(), normal)
    assert not np.array_equal(hal.uniform((64,), seed=8, device="cpu:0").numpy(),
                              hal.uniform((64,), seed=7, device="cpu:0").numpy())


def test_creation_on_an_explicit_stream(device):
    stream = hal.Stream(device)
    t = hal.ones((3,), stream=stream)
    assert t.device == device
    stream.synchronize()
    np.testing.assert_array_equal(t.numpy(stream=stream), [1, 1, 1])


def test_tensor_cannot_be_made_directly_and_says_what_makes_one():
    with pytest.raises(TypeError, match=r"hal\.Tensor cannot be made directly: use hal\.tensor"):
        hal.Tensor()
    with pytest.raises(TypeError, match="from_numpy"):
        hal.Tensor([1, 2, 3], dtype=hal.f32)


class TensorSubclass(hal.Tensor):
    pass


@pytest.mark.parametrize("cls", [hal.Tensor, TensorSubclass])
def test_an_uninitialised_tensor_is_refused_where_it_is_used(cpu, cls):
    # __new__ without __init__ leaves an object that holds no tensor; reading one crashed.
    shell = cls.__new__(cls)
    x = hal.ones((2,), device=cpu)
    uses = [
        lambda: shell.shape, lambda: shell.dtype, lambda: repr(shell), lambda: len(shell),
        lambda: shell.numpy(), lambda: shell[0], lambda: shell.reshape(2),
        lambda: shell + 1, lambda: x + shell, lambda: hal.add(shell, x), lambda: hal.relu(shell),
        lambda: hal.tensor(shell), lambda: hal.from_dlpack(shell), lambda: shell.__dlpack__(),
        lambda: hal.layer_norm(x, [2], weight=shell),
    ]
    for use in uses:
        with pytest.raises(hal.InvalidState, match=r"hal\.Tensor was not initialised: .*__new__"):
            use()


def test_numpy_of_an_expanded_view_is_read_only(cpu):
    # Its rows share memory: a write to one would change all four, so, as with
    # numpy.broadcast_to, there is none.
    t = hal.tensor([1.0, 2.0, 3.0], device=cpu)
    expanded = t.reshape(1, 3).expand(4, 3)
    for array in (expanded.numpy(), np.asarray(expanded)):
        assert not array.flags.writeable
        np.testing.assert_array_equal(array, np.broadcast_to([1.0, 2.0, 3.0], (4, 3)))
        with pytest.raises(ValueError, match="read-only"):
            array[0, 0] = 9.0
    assert t.numpy().tolist() == [1.0, 2.0, 3.0]
    # Views that repeat nothing stay writable: an expansion of a dimension of one, a copy.
    assert t.reshape(1, 3).expand(1, 3).numpy().flags.writeable
    assert expanded.contiguous().numpy().flags.writeable
    assert t.numpy().flags.writeable


def test_a_numpy_integer_alone_is_a_size_or_an_axis(cpu):
    # As NumPy and PyTorch take one: np.zeros(np.int64(3)), torch.zeros(np.int64(3)).
    assert hal.zeros(np.int64(3), device=cpu).shape == (3,)
    assert hal.empty(np.int32(2), device=cpu).shape == (2,)
    t = hal.from_numpy(np.arange(6, dtype=np.float32))
    assert t.reshape(np.int64(6)).shape == (6,)
    assert t.reshape(np.int64(3), 2).shape == (3, 2)
    m = t.reshape(2, 3)
    np.testing.assert_array_equal(m.sum(axis=np.int64(0)).numpy(), [3.0, 5.0, 7.0])
    # An array of sizes is still a sequence of them, not one size; a 0-d array is one size, a
    # 0-d array of floats none (NumPy's TypeError).
    assert hal.zeros(np.array([2, 3]), device=cpu).shape == (2, 3)
    assert hal.zeros(np.array(3), device=cpu).shape == (3,)
    assert t.reshape(np.array(2), np.array(3)).shape == (2, 3)
    np.testing.assert_array_equal(m.sum(axis=np.array(1)).numpy(), [3.0, 12.0])
    with pytest.raises(TypeError):
        hal.zeros(np.array(3.0), device=cpu)


def test_sizes_past_int64_name_the_shape_and_the_dimension(cpu):
    past = 2**64
    with pytest.raises(hal.InvalidArgument,
                       match=rf"\[{past}\] is not a shape: the size of dimension 0, {past}, "
                             "does not fit in int64"):
        hal.empty([past], device=cpu)
    with pytest.raises(hal.InvalidArgument, match=rf"^hal: InvalidArgument: {past} is not a shape"):
        hal.zeros(past, device=cpu)
    below = -2**63 - 1
    with pytest.raises(hal.InvalidArgument, match=rf"the size of dimension 1, {below}, does not"):
        hal.full((2, below), 1.0, device=cpu)
    t = hal.zeros((2, 3), device=cpu)
    with pytest.raises(hal.InvalidArgument, match=rf"\(3, {past}\) is not a shape: .*dimension 1"):
        t.reshape(3, past)
    with pytest.raises(hal.OutOfRange,
                       match=rf"index {past} is out of range for dimension 1 \(size 3\)"):
        t[0, past]
    # Arguments pybind11 converts say which function and which argument.
    with pytest.raises(TypeError, match=r"(?s)transpose\(\): incompatible function arguments"
                                        r".*dim1: int"):
        t.transpose(0, past)
