"""Devices: listing, lookup, what each says of itself, the summary, backends, the default device
and its scope, selection with every candidate's reason."""

import os
import subprocess
import sys
import textwrap
import threading

import numpy as np

import pytest

import hal
from conftest import DEVICES


def test_devices_lists_the_visible_devices_with_cpu_first():
    ids = [d.id for d in hal.devices()]
    assert ids[0] == "cpu:0"
    assert len(ids) == len(set(ids))
    assert set(ids) <= {d.id for d in hal.devices(all=True)}


def test_device_by_id_and_by_uuid_prefix(device):
    assert hal.device(device.id) == device
    assert hal.Device(device.id) == device
    assert hal.device(device.uuid.replace("-", "")[:12]) == device
    assert str(device) == device.id
    assert repr(device) == f"hal.device('{device.id}')"
    assert hash(device) == hash(hal.device(device.id))


def test_handles_are_unequal_to_other_types(cpu):
    # NotImplemented, then Python's fallback: False, where a TypeError broke `in` and `==`.
    stream, event = hal.Stream(cpu), hal.Event(cpu)
    for handle in (cpu, stream, event):
        assert (handle == None) is False and (handle != None) is True  # noqa: E711
        assert (handle == "cpu:0") is False and handle != 3
        assert handle in [None, "x", handle] and None not in [handle]
    assert cpu == hal.device("cpu:0") and stream == stream and event == event
    assert stream != hal.Stream(cpu) and event != hal.Event(cpu)


def test_an_unknown_device_is_not_found_naming_it():
    with pytest.raises(hal.NotFound) as caught:
        hal.device("nowhere:7")
    assert "nowhere:7" in str(caught.value)
    assert isinstance(caught.value, LookupError)


def test_what_a_device_says_of_itself(device):
    info = device.info
    assert info["id"] == device.id
    assert info["backend"] == device.backend == device.id.split(":")[0]
    assert info["kind"] == device.kind in ("cpu", "gpu", "accelerator")
    assert info["name"] == device.name and info["vendor"] == device.vendor
    assert [str(d) for d in device.dtypes] == info["dtypes"]
    assert hal.f32 in device.dtypes and device.supports("f32")
    assert info["features"] == sorted(info["features"]) == device.features
    for feature in device.features:
        assert device.has_feature(feature)
    assert not device.has_feature("no-such-feature")
    assert set(info["limits"]) >= {"max_allocation_bytes", "max_work_group_size"}
    assert set(info["peak"]) == {"f32_gflops", "bandwidth_gbps", "launch_latency_us"}
    total = device.memory_total
    assert total is None or total > 0
    free = device.memory_free()
    assert free is None or free >= 0


def test_the_op_table_of_a_device(device):
    table = device.supported_ops()
    names = [op["name"] for op in table]
    assert "add" in names and "matmul" in names
    for op in table:
        assert len(op["dtypes"]) == len(op["kernels"])
        for dtype in op["dtypes"]:
            assert device.supports_op(op["name"], dtype)
            assert hal.supports_op(device, op["name"], dtype)
    with pytest.raises(hal.NotFound, match="no_such_op"):
        device.supports_op("no_such_op", "f32")


def test_summary_counts_every_visible_device():
    summary = hal.summary()
    assert [d.id for d in summary["devices"]] == [d.id for d in DEVICES]
    assert len(summary["memory_free"]) == len(DEVICES)
    assert sum(summary["by_backend"].values()) == len(DEVICES)
    assert sum(summary["by_kind"].values()) == len(DEVICES)
    assert summary["memory_total_bytes"] > 0
    assert {b["name"] for b in summary["backends"]} >= {"cpu", "opencl", "cuda"}


def test_backends_say_why_one_is_unavailable():
    backends = {b["name"]: b for b in hal.backends()}
    assert backends["cpu"]["available"] and backends["cpu"]["device_count"] == 1
    for backend in backends.values():
        assert backend["available"] or backend["reason"]
    assert "cpu" in hal.compiled_backends()


def test_what_backends_say_keeps_bytes_that_are_not_utf8(tmp_path):
    # A reason quoting a file name that is not UTF-8 (dlopen's, of a libcuda.so.1 that is no
    # library) comes through with \xff escapes, as hal's errors do; strict decoding raised
    # UnicodeDecodeError from hal.backends() and hal.summary(). A device's name and vendor, which
    # a plugin may cut inside a UTF-8 sequence (plugin.h), go through the same conversion.
    if "cuda" not in hal.compiled_backends():
        pytest.skip("the CUDA backend is not compiled in: nothing dlopens libcuda.so.1")
    drivers = os.path.join(os.fsencode(tmp_path), b"drivers-\xff")
    os.mkdir(drivers)
    with open(os.path.join(drivers, b"libcuda.so.1"), "wb") as junk:
        junk.write(b"not a shared library")
    code = """
        import hal
        reasons = [b["reason"] for b in hal.backends()]
        assert reasons == [b["reason"] for b in hal.summary()["backends"]]
        assert all(isinstance(d.name + d.vendor + d.info["name"], str) for d in hal.devices())
        print("\\n".join(reason for reason in reasons if "libcuda" in reason))
        """
    search = [os.fsdecode(drivers), os.environ.get("LD_LIBRARY_PATH")]  # found first
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=dict(os.environ, LD_LIBRARY_PATH=os.pathsep.join(filter(None, search))),
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    if "drivers-" not in result.stdout:
        pytest.skip(f"the CUDA backend's reason quotes no file: {result.stdout!r}")
    assert "drivers-\\xff/libcuda.so.1" in result.stdout


def test_default_device_and_its_scope_per_thread(device):
    assert hal.default_device() in DEVICES
    seen = {}
    with hal.device_scope(device) as chosen:
        assert chosen == device
        assert hal.default_device() == device
        assert hal.zeros((2,)).device == device
        # Another thread keeps its own default.
        worker = threading.Thread(target=lambda: seen.update(other=hal.default_device()))
        worker.start()
        worker.join(timeout=30)
    assert seen["other"] == hal.default_device()
    with pytest.raises(hal.NotFound):
        hal.device_scope("nowhere:0")


def test_set_devices_hides_and_restores():
    try:
        hal.set_devices("cpu:*")
        assert [d.id for d in hal.devices()] == ["cpu:0"]
        with pytest.raises(hal.InvalidArgument, match="HAL_DEVICES|selector|expected"):
            hal.set_devices("cpu:0;;;bad")
            hal.devices()
    finally:
        hal.set_devices(None)
    assert [d.id for d in hal.devices()] == [d.id for d in DEVICES]


def test_select_gives_the_choice_and_every_reason():
    selection = hal.select(min_memory="1M", kind=["cpu", "gpu", "accelerator"], dtype="f32")
    assert selection.device is not None
    ids = [c["id"] for c in selection.candidates]
    assert ids[0] == selection.device.id
    assert sorted(ids) == sorted(d.id for d in DEVICES)
    for candidate in selection.candidates:
        assert candidate["reason"]
        assert candidate["device"] == hal.device(candidate["id"])
    assert selection.candidates[0]["reason"].startswith("chosen")
    assert selection.device.id in str(selection)
    workload = hal.Workload.matmul(256, 256, 256)
    assert hal.select(workload=workload, vendor="nobody,else").device is not None


def test_select_names_each_device_and_its_failure_when_none_fits():
    with pytest.raises(hal.NotFound) as caught:
        hal.select(min_memory="1000000T")
    for device in DEVICES:
        assert device.id in str(caught.value)
    with pytest.raises(hal.InvalidArgument, match="not a device kind"):
        hal.select(kind="toaster")
    with pytest.raises(hal.InvalidArgument, match="min_memory"):
        hal.select(min_memory="lots")


def test_version_and_log_level():
    assert hal.__version__.count(".") == 2
    previous = hal.log_level()
    try:
        hal.set_log_level("warn")
        assert hal.log_level() == "warn"
        with pytest.raises(hal.InvalidArgument, match="loud"):
            hal.set_log_level("loud")
    finally:
        hal.set_log_level(previous)


def test_streams_events_and_kernel_caches_of_a_device(device):
    stream, event = device.create_stream(), device.create_event()
    assert isinstance(stream, hal.Stream) and stream.device == device
    assert isinstance(event, hal.Event) and event.device == device and not event.recorded
    device.clear_kernel_cache()  # compiled kernels are compiled (or read from disk) again
    np_sum = hal.add(hal.ones((4,), device=device, stream=stream), 1.0, stream=stream)
    assert np_sum.numpy(stream=stream).tolist() == [2.0, 2.0, 2.0, 2.0]


def test_dtypes_and_their_names():
    assert [d.name for d in hal.DType.__members__.values()] == [
        "f32", "f16", "bf16", "f64", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "bool"]
    assert hal.float32 is hal.f32 and hal.float16 is hal.f16 and hal.bfloat16 is hal.bf16
    assert hal.float64 is hal.f64 and hal.int8 is hal.i8 and hal.uint8 is hal.u8
    assert hal.int32 is hal.i32 and hal.int64 is hal.i64 and hal.DType.bool is hal.bool
    assert hal.int16 is hal.i16 and hal.uint16 is hal.u16 and hal.uint32 is hal.u32
    assert hal.uint64 is hal.u64 and hal.u16.itemsize == 2 and hal.u64.itemsize == 8
    assert hal.f16.itemsize == 2 and hal.i64.itemsize == 8 and hal.bool.itemsize == 1
    assert hal.bf16.is_floating_point and not hal.i32.is_floating_point
    assert str(hal.bf16) == "bf16"
    for name in ("f32", "float32", "bool"):
        assert hal.dtype(name) == hal.dtype(hal.dtype(name))
    assert hal.dtype(np.float16) == hal.f16 and hal.dtype(np.dtype("int64")) == hal.i64
    with pytest.raises(hal.InvalidArgument, match="is not a dtype"):
        hal.dtype(object())
