"""hal::Error as Python exceptions: a class per ErrorCode under hal.Error, each also the built-in
exception of its kind, with the C++ message word for word and its parts as attributes; and
errors raised where work fails later (AsyncFailure, DeviceLost) in a process of their own."""

import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import hal

CODES = {
    "InvalidArgument": ValueError,
    "OutOfMemory": MemoryError,
    "Unsupported": NotImplementedError,
    "CompileFailed": None,
    "DeviceLost": None,
    "BackendUnavailable": None,
    "PluginAbiMismatch": None,
    "NotFound": LookupError,
    "InvalidState": None,
    "OutOfRange": IndexError,
    "Timeout": TimeoutError,
    "Internal": None,
    "AsyncFailure": None,
}


@pytest.mark.parametrize("code", sorted(CODES))
def test_every_code_has_its_class(code):
    cls = getattr(hal, code)
    assert issubclass(cls, hal.Error) and issubclass(hal.Error, RuntimeError)
    assert cls.__name__ == code and cls.__module__ == "hal"
    if CODES[code]:
        assert issubclass(cls, CODES[code])


def test_the_message_is_the_cpp_message_with_its_parts(cpu):
    a = hal.zeros((2, 3), device=cpu)
    b = hal.zeros((4, 5), device=cpu)
    with pytest.raises(hal.InvalidArgument) as caught:
        hal.add(a, b)
    error = caught.value
    assert str(error) == f"hal: InvalidArgument: {error.message}"
    assert error.code == "InvalidArgument"
    assert "[2, 3]" in error.message and "[4, 5]" in error.message
    assert error.device == "cpu:0" and error.op == "add"
    assert error.native_code == 0
    assert isinstance(error, ValueError)


def test_out_of_memory_gives_the_figures(cpu):
    with pytest.raises(hal.OutOfMemory) as caught:
        hal.empty((1 << 40,), dtype="f32", device=cpu)
    message = str(caught.value)
    assert "cpu:0" in message and "total" in message and "free" in message
    assert hal.zeros((4,), device=cpu).numpy().tolist() == [0, 0, 0, 0]


def test_unsupported_names_the_op_the_dtypes_and_the_device():
    for device in hal.devices():
        if not hal.supports_op(device, "conv", "f32"):
            x = hal.zeros((1, 1, 4, 4), device=device)
            w = hal.zeros((1, 1, 3, 3), device=device)
            with pytest.raises(hal.Unsupported) as caught:
                hal.conv(x, w)
            assert "conv" in str(caught.value) and device.id in str(caught.value)
            return
    pytest.skip("every visible device runs conv")


def test_bad_values_from_python_are_hal_errors_naming_them(cpu):
    with pytest.raises(hal.InvalidArgument, match="'f33' is not a dtype"):
        hal.zeros((2,), dtype="f33")
    with pytest.raises(hal.Unsupported, match="complex64"):
        hal.tensor(np.zeros(3, dtype=np.complex64), device=cpu)
    with pytest.raises(hal.InvalidArgument, match="not a shape"):
        hal.zeros("two")
    with pytest.raises(hal.InvalidArgument, match="not a device"):
        hal.zeros((2,), device=3.5)
    with pytest.raises(hal.InvalidArgument, match="at least one hal.Tensor"):
        hal.add(1, 2)
    with pytest.raises(hal.OutOfRange, match="out of range"):
        hal.zeros((2, 3), device=cpu)[5]
    with pytest.raises(hal.InvalidArgument, match="memory kind"):
        cpu.memory_stats("swap")
    # numpy.dtype(None) is float64; hal gives None no meaning where a dtype is due.
    for call in (lambda: hal.zeros((2,), dtype=None, device=cpu),
                 lambda: hal.cast(hal.zeros((2,), device=cpu), None),
                 lambda: hal.dtype(None)):
        with pytest.raises(hal.InvalidArgument, match="None is not a dtype"):
            call()


def test_arguments_of_the_wrong_type_are_type_errors_naming_the_call(cpu):
    # pybind11's own cast said only "Unable to cast Python instance ..." (a RuntimeError).
    x = hal.zeros((3,), device=cpu)
    for call, named in [(lambda: hal.add(x, x, stream="cpu:0"), "an op on f32[3]"),
                        (lambda: x.numpy(stream="cpu:0"), "numpy() of f32[3]"),
                        (lambda: x.to("cpu:0", stream=0), "to(cpu:0) of f32[3]"),
                        (lambda: hal.zeros(3, stream="cpu:0"), "zeros")]:
        with pytest.raises(TypeError, match=re.escape(named) + ".*must be a hal.Stream or None"):
            call()
    with pytest.raises(BufferError, match="copy must be True, False or None, not 'no'"):
        x.__dlpack__(copy="no")
    for value in (1.5, 2**64):
        with pytest.raises(hal.InvalidArgument, match="min_memory: .* is not a whole number"):
            hal.select(min_memory=value)
    with pytest.raises(hal.InvalidArgument, match=r"each step is \(op name, \[operand indices\]\)"):
        hal.fused_elementwise([("add", "ab")], [x, x])


def test_bytes_that_are_not_utf8_in_a_message_keep_it_a_hal_error():
    # A file name that is not UTF-8, as os.fsdecode gives it (surrogateescape).
    path = os.fsdecode(b"/nonexistent/missing-\xff.onnx")
    with pytest.raises(hal.InvalidArgument) as caught:
        hal.load_onnx(path)
    error = caught.value
    assert "/nonexistent/missing-\\xff.onnx" in str(error)  # the byte, escaped
    assert str(error) == f"hal: InvalidArgument: {error.message}"
    assert error.code == "InvalidArgument"


def run_isolated(code, sim_config):
    """Runs `code` in a Python of its own with HAL_SIM_CONFIG set (sim loads it once)."""
    env = dict(os.environ, HAL_SIM_CONFIG=sim_config, HAL_DEVICES="cpu:*;sim:*")
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env, capture_output=True, text=True, timeout=120,
    )


def test_a_failed_op_is_reported_and_the_next_one_runs():
    result = run_isolated(
        """
        import hal
        sim = hal.device("sim:0")
        x = hal.tensor([1.0, -2.0], device=sim)
        try:
            hal.relu(x)
        except hal.Internal as error:
            print("caught", error.code, "|", error)
        print(hal.relu(x).tolist())
        """,
        "devices=1,fail_op_at=1",
    )
    assert result.returncode == 0, result.stderr
    assert "caught Internal | hal: Internal: " in result.stdout
    assert "sim:0" in result.stdout and "injected" in result.stdout
    assert "[1.0, 0.0]" in result.stdout


def test_a_lost_device_stays_lost():
    result = run_isolated(
        """
        import hal
        sim = hal.device("sim:0")
        codes = []
        for attempt in range(40):
            try:
                hal.ones((8,), device=sim).numpy()
            except hal.Error as error:
                codes.append(error.code)
        print(sorted(set(codes)))
        try:
            hal.zeros((2,), device=sim).numpy()
        except hal.DeviceLost as error:
            print("lost:", error.device, isinstance(error, hal.Error))
        """,
        "devices=1,lose_device_at=5",
    )
    assert result.returncode == 0, result.stderr
    assert "lost: sim:0 True" in result.stdout
