"""DLPack with NumPy and with capsules of any producer: zero copies on the CPU in both
directions (checked by address), versioned and 0.x capsules, device types, lifetimes (the
producer deleted first), and every refusal: a capsule consumed twice, a device or dtype hal
cannot take, strides that step backwards, a layout that is not contiguous."""

import gc
import re
import threading
import time

import numpy as np
import pytest

import hal
from conftest import DEVICES
from dlpack_capsules import (
    CAPSULE_DESTRUCTOR, IS_COPIED, READ_ONLY, Producer, api, call_deleter_and_leave, capsule_name,
    float_array, versioned_header)

KDL_CPU, KDL_CUDA, KDL_OPENCL, KDL_VULKAN = 1, 2, 4, 7


def address(array):
    return array.__array_interface__["data"][0]


def test_numpy_array_into_hal_without_a_copy(cpu):
    array = float_array()
    t = hal.from_dlpack(array)
    assert t.device == cpu and t.dtype == hal.f32 and t.shape == (3, 4)
    assert t.data_ptr() == address(array)
    array[0, 0] = 99.0  # the same memory
    assert t.numpy()[0, 0] == 99.0
    assert hal.from_numpy(array).data_ptr() == address(array)


def test_hal_tensor_into_numpy_without_a_copy(cpu):
    t = hal.arange(12, dtype="f32", device=cpu).reshape(3, 4)
    array = np.from_dlpack(t)
    assert address(array) == t.data_ptr()
    np.testing.assert_array_equal(array, np.arange(12).reshape(3, 4))
    assert t.__dlpack_device__() == (KDL_CPU, 0)


def test_the_producer_may_go_first_either_way(cpu):
    array = float_array()
    expected = array.copy()
    t = hal.from_dlpack(array)
    del array
    gc.collect()
    np.testing.assert_array_equal((t + 1).numpy(), expected + 1)

    source = hal.tensor(expected, device=cpu)
    consumer = np.from_dlpack(source)
    del source
    gc.collect()
    hal.full((1 << 16,), 3.0, device=cpu).numpy()  # reuse freed memory, if any was freed
    np.testing.assert_array_equal(consumer, expected)


def test_strided_numpy_views_keep_their_strides(cpu):
    array = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = hal.from_dlpack(array.T)
    assert t.strides == (1, 4) and t.data_ptr() == address(array)
    np.testing.assert_array_equal(t.numpy(), array.T)
    sliced = hal.from_dlpack(array[1:, ::2])
    assert sliced.data_ptr() == address(array) + 16
    np.testing.assert_array_equal(sliced.numpy(), array[1:, ::2])


def test_numpy_strides_that_step_backwards_are_refused(cpu):
    with pytest.raises(hal.InvalidArgument, match="step backwards"):
        hal.from_dlpack(np.arange(4, dtype=np.float32)[::-1])


def test_a_tensor_that_is_not_contiguous_is_not_exported(cpu):
    t = hal.zeros((2, 3), device=cpu).transpose(0, 1)
    with pytest.raises(BufferError, match="not contiguous"):
        np.from_dlpack(t)
    assert np.from_dlpack(t.contiguous()).shape == (3, 2)


def test_every_dtype_through_hal_capsules(device):
    if device.backend not in ("cpu", "opencl", "cuda"):
        pytest.skip(f"DLPack has no device type for {device.backend}")
    for dtype in hal.DType.__members__:
        if not device.supports(dtype):
            continue
        t = hal.tensor(np.arange(6) % 2, dtype=dtype, device=device)
        for max_version in (None, (1, 0)):
            back = hal.from_dlpack(t.__dlpack__(max_version=max_version))
            assert back.dtype == t.dtype and back.device == device
            np.testing.assert_array_equal(back.numpy(), t.numpy())


def test_hal_capsules_on_any_device_carry_the_tensor_itself(device):
    if device.backend not in ("cpu", "opencl", "cuda"):
        with pytest.raises(BufferError, match="no device type"):
            hal.zeros((2,), device=device).__dlpack__()
        with pytest.raises(BufferError):
            hal.zeros((2,), device=device).__dlpack_device__()
        return
    t = hal.arange(8, dtype="f32", device=device)[2:6]
    kind = {"cpu": KDL_CPU, "cuda": KDL_CUDA, "opencl": KDL_OPENCL}[device.backend]
    assert t.__dlpack_device__() == (kind, 0 if kind == KDL_CPU else int(device.id.split(":")[1]))
    back = hal.from_dlpack(t.__dlpack__())
    assert back.shape == (4,) and back.offset == t.offset
    np.testing.assert_array_equal(back.numpy(), [2, 3, 4, 5])


def test_versioned_capsules_when_the_consumer_asks(cpu):
    t = hal.ones((4,), device=cpu)
    legacy = t.__dlpack__()
    assert capsule_name(legacy) == "dltensor"
    versioned = t.__dlpack__(max_version=(1, 2))
    assert capsule_name(versioned) == "dltensor_versioned"
    assert versioned_header(versioned) == (1, 0, 0)
    assert capsule_name(t.__dlpack__(max_version=(0, 8))) == "dltensor"
    back = hal.from_dlpack(versioned)
    assert back.data_ptr() == t.data_ptr()
    assert capsule_name(versioned) == "used_dltensor_versioned"


def test_a_capsule_is_consumed_once(cpu):
    capsule = hal.ones((3,), device=cpu).__dlpack__()
    hal.from_dlpack(capsule)
    assert capsule_name(capsule) == "used_dltensor"
    with pytest.raises(hal.InvalidArgument, match="consumed already"):
        hal.from_dlpack(capsule)


def test_export_to_another_device_copies_only_when_allowed():
    for device in DEVICES:
        if device.backend in ("opencl", "cuda"):
            t = hal.arange(4, dtype="f32", device=device)
            with pytest.raises(BufferError, match="copy=False"):
                t.__dlpack__(dl_device=(KDL_CPU, 0), copy=False)
            capsule = t.__dlpack__(dl_device=(KDL_CPU, 0), max_version=(1, 0))
            assert versioned_header(capsule)[2] & 2  # DLPACK_FLAG_BITMASK_IS_COPIED
            on_cpu = hal.from_dlpack(capsule)
            assert on_cpu.device.id == "cpu:0"
            np.testing.assert_array_equal(on_cpu.numpy(), [0, 1, 2, 3])
            with pytest.raises(BufferError, match="only to its own or the CPU"):
                t.__dlpack__(dl_device=(KDL_VULKAN, 0))
            # NumPy reads host memory only, and says so.
            with pytest.raises((BufferError, RuntimeError)):
                np.from_dlpack(t)
            return
    pytest.skip("no OpenCL or CUDA device visible")


def test_copy_true_exports_a_copy(cpu):
    t = hal.ones((3,), device=cpu)
    copy = hal.from_dlpack(t.__dlpack__(copy=True))
    assert copy.data_ptr() != t.data_ptr()
    np.testing.assert_array_equal(copy.numpy(), [1, 1, 1])


def test_a_foreign_capsule_is_handed_back_once_when_hal_lets_go(cpu):
    for version in (None, (1, 0)):
        producer = Producer(float_array(), version=version)
        t = hal.from_dlpack(producer.capsule())
        assert t.data_ptr() == address(producer.array)
        u = t * 2  # enqueued work holds the memory too
        del t
        gc.collect()
        np.testing.assert_array_equal(u.numpy(), producer.array * 2)
        hal.synchronize()
        assert producer.deleted == 1


def test_a_deleter_may_drop_the_last_reference_to_the_stream_it_runs_on(cpu):
    # The producer's deleter runs on the worker of the stream whose work last used the memory;
    # dropping that hal.Stream there (or the garbage collector collecting it there) destroyed
    # the stream on its own worker, which aborted the process ("Resource deadlock avoided").
    # The case needs the stream's work still pending when `del t` runs, so products queued in
    # front of it keep the worker busy; where the worker finished first anyway (a loaded
    # machine), the deleter ran here and the try is repeated, a bounded number of times.
    busy = hal.ones((384, 384), device=cpu)
    for attempt in range(5):
        holder = {"stream": hal.Stream(cpu)}
        ran_on = []

        def on_delete():
            ran_on.append(threading.current_thread().ident)
            holder.clear()  # the last reference to the stream whose worker runs this

        producer = Producer(float_array(), on_delete=on_delete)
        t = hal.from_dlpack(producer.capsule())
        for _ in range(8):
            hal.matmul(busy, busy, stream=holder["stream"])
        u = hal.mul(t, t, stream=holder["stream"])  # the stream's work now holds the memory too
        done = holder["stream"].record()
        del t
        done.synchronize()
        for _ in range(200):  # the worker hands the memory back after the work: bounded, 2 s
            if producer.deleted:
                break
            time.sleep(0.01)
        assert producer.deleted == 1
        assert holder == {}
        np.testing.assert_array_equal(u.numpy(), producer.array * producer.array)
        if ran_on and ran_on[0] != threading.get_ident():
            break
    assert ran_on and ran_on[0] != threading.get_ident(), "the worker never ran the deleter"
    # The stream went on another thread; hal still works.
    np.testing.assert_array_equal((hal.ones((2,), device=cpu) * 3).numpy(), [3, 3])


def test_a_deleter_called_by_a_consumer_that_left_the_capsule_frees_once(device):
    # PyTorch 1.13 given an OpenCL capsule calls its deleter, then raises and leaves the capsule
    # unconsumed: hal's capsule destructor freed the export a second time (abort: double free).
    if device.backend not in ("cpu", "opencl", "cuda"):
        pytest.skip(f"DLPack has no device type for {device.backend}")
    for max_version in (None, (1, 0)):
        for _ in range(50):  # freed addresses come back: the next capsule is not mistaken
            t = hal.arange(6, dtype="f32", device=device)
            capsule = t.__dlpack__(max_version=max_version)
            call_deleter_and_leave(capsule)
            del capsule
            gc.collect()
        np.testing.assert_array_equal(t.numpy(), np.arange(6))


def test_refused_capsules_stay_with_their_producer(cpu):
    cases = [
        (dict(device=(KDL_VULKAN, 0)), hal.Unsupported, "device type 7"),
        (dict(dtype=(5, 64, 1)), hal.Unsupported, "no hal dtype"),  # complex64
        (dict(dtype=(2, 32, 4)), hal.Unsupported, "4 lanes"),
        (dict(strides=[-4, 1]), hal.InvalidArgument, "step backwards"),
        (dict(data_offset=2), hal.InvalidArgument, "not aligned"),
        (dict(version=(2, 0)), hal.Unsupported, "DLPack 2.0"),
        (dict(version=(1, 0), flags=READ_ONLY), hal.InvalidArgument, "read-only"),
        (dict(device=(KDL_OPENCL, 0)), (hal.Unsupported, hal.NotFound), "opencl:0"),
    ]
    if not any(d.backend == "cuda" for d in DEVICES):
        cases.append((dict(device=(KDL_CUDA, 0)), hal.NotFound, "cuda:0"))
    for fields, error, text in cases:
        producer = Producer(float_array(), **fields)
        capsule = producer.capsule()
        with pytest.raises(error, match=text):
            hal.from_dlpack(capsule)
        assert not capsule_name(capsule).startswith("used_"), fields
        assert producer.deleted == 0
        del capsule
        gc.collect()
        assert producer.deleted == 1, fields


def test_read_only_memory_is_refused_and_other_flags_are_not(cpu, tmp_path):
    # Read-only pages, as NumPy 2 flags a read-only array's: a hal tensor over them would be
    # written through (its numpy() is a writable view), which crashes the process.
    path = tmp_path / "read_only.bin"
    np.arange(4, dtype=np.float32).tofile(path)
    pages = np.memmap(path, dtype=np.float32, mode="r")
    producer = Producer(pages, version=(1, 0), flags=READ_ONLY | IS_COPIED)
    capsule = producer.capsule()
    with pytest.raises(hal.InvalidArgument, match="read-only .DLPACK_FLAG_BITMASK_READ_ONLY."):
        hal.from_dlpack(capsule)
    assert capsule_name(capsule) == "dltensor_versioned" and producer.deleted == 0
    copied = Producer(float_array(), version=(1, 0), flags=IS_COPIED)
    t = hal.from_dlpack(copied.capsule())
    assert t.data_ptr() == address(copied.array)
    np.testing.assert_array_equal(t.numpy(), copied.array)


def test_foreign_capsules_with_offsets_and_without_strides(cpu):
    array = float_array()
    producer = Producer(array, strides=None, byte_offset=0)
    t = hal.from_dlpack(producer.capsule())
    assert t.is_contiguous() and t.data_ptr() == address(array)
    np.testing.assert_array_equal(t.numpy(), array)
    flat = np.arange(8, dtype=np.float32)
    shifted = Producer(flat[:4], byte_offset=16)
    u = hal.from_dlpack(shifted.capsule())
    np.testing.assert_array_equal(u.numpy(), flat[4:8])
    empty = Producer(np.zeros((0, 3), dtype=np.float32))
    e = hal.from_dlpack(empty.capsule())
    assert e.shape == (0, 3) and empty.deleted == 1


def test_what_is_not_dlpack_is_refused(cpu):
    with pytest.raises(hal.InvalidArgument, match="has no __dlpack__"):
        hal.from_dlpack([1, 2, 3])
    buffer = np.zeros(1)
    other = api.PyCapsule_New(buffer.ctypes.data, b"other", CAPSULE_DESTRUCTOR())  # no destructor
    with pytest.raises(hal.InvalidArgument, match="'other' is not a DLPack tensor"):
        hal.from_dlpack(other)
    t = hal.zeros((2,), device=cpu)
    assert hal.from_dlpack(t) is t


def test_dl_device_and_max_version_that_are_no_pair_of_ints_are_named(cpu):
    t = hal.arange(4, dtype="f32", device=cpu)
    for value in (5, ("a", "b"), (1, 2**64), "cpu", (1, 0, 0)):
        with pytest.raises(BufferError, match=r"__dlpack__: dl_device must be \(device type, "
                                              rf"index\), two ints, not {re.escape(repr(value))}"):
            t.__dlpack__(dl_device=value)
    with pytest.raises(BufferError, match=r"max_version must be \(major, minor\), two ints, not 5"):
        t.__dlpack__(max_version=5)


def test_the_host_is_cpu_index_0_only(cpu):
    # DLPack's (CPU, 5) is no memory of this process's host, which is (CPU, 0): refused, not
    # taken as cpu:0, and the capsule stays with its producer.
    producer = Producer(float_array(), device=(KDL_CPU, 5))
    capsule = producer.capsule()
    with pytest.raises(hal.NotFound, match=r"from_dlpack: DLPack device \(CPU, index 5\) is not "
                                           r"the host: hal's host, cpu:0, is \(CPU, 0\)"):
        hal.from_dlpack(capsule)
    assert capsule_name(capsule) == "dltensor" and producer.deleted == 0
    del capsule
    gc.collect()
    assert producer.deleted == 1
    t = hal.arange(4, dtype="f32", device=cpu)
    with pytest.raises(BufferError, match=r"cannot be exported to DLPack device \(1, 5\); only "
                                          r"to its own or the CPU \(1, 0\)"):
        t.__dlpack__(dl_device=(KDL_CPU, 5))
    assert hal.from_dlpack(t.__dlpack__(dl_device=(KDL_CPU, 0))).device == cpu
