"""Every op of hal/ops.hpp from Python, on every device, against NumPy: as functions, as tensor
methods and as operators (numbers and arrays beside tensors too). An op a device cannot run is
hal.Unsupported there, naming it."""

import math

import numpy as np
import pytest

import hal
from conftest import assert_close, runs

A = np.array([[0.5, -1.25, 2.0, 3.5], [-0.75, 1.5, -2.5, 0.25]], dtype=np.float32)
B = np.array([[1.5, 0.5, -1.0, 2.0], [0.25, -3.0, 2.0, 1.0]], dtype=np.float32)
ROW = np.array([1.0, 2.0, -1.0, 0.5], dtype=np.float32)  # broadcasts along A's rows

BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "maximum": np.maximum, "minimum": np.minimum,
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
    "gt": np.greater, "ge": np.greater_equal,
}

UNARY = {
    "neg": np.negative, "abs": np.abs, "relu": lambda x: np.maximum(x, 0), "exp": np.exp,
    "tanh": np.tanh, "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "gelu": lambda x: x * (1 + np.vectorize(math.erf)(x / math.sqrt(2))) / 2,
    "silu": lambda x: x / (1 + np.exp(-x)), "erf": np.vectorize(math.erf),
    "floor": np.floor, "ceil": np.ceil, "round": np.round, "sin": np.sin, "cos": np.cos,
    "tan": np.tan, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "asinh": np.arcsinh,
}
POSITIVE = {"log": np.log, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
            "acosh": np.arccosh}
UNIT = {"asin": np.arcsin, "acos": np.arccos, "atanh": np.arctanh}


def check(device, op, dtype, compute, expected):
    """The result of `compute()` against NumPy's, or hal.Unsupported where `device` lacks `op`."""
    if not runs(device, op, dtype):
        with pytest.raises(hal.Unsupported) as caught:
            compute()
        assert op in str(caught.value) and device.id in str(caught.value)
        return
    result = compute()
    assert result.device == device
    assert_close(result.numpy(), expected, dtype)


@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_ops_broadcast_like_numpy(device, op):
    a, b, row = (hal.tensor(x, device=device) for x in (A, B, ROW))
    fn = getattr(hal, op)
    check(device, op, "f32", lambda: fn(a, b), BINARY[op](A, B))
    check(device, op, "f32", lambda: fn(a, row), BINARY[op](A, ROW))


def test_pow(device):
    base = np.abs(A) + 0.5
    check(device, "pow", "f32",
          lambda: hal.pow(hal.tensor(base, device=device), hal.tensor(B, device=device)),
          np.power(base, B))


@pytest.mark.parametrize("op", sorted(UNARY) + sorted(POSITIVE) + sorted(UNIT))
def test_unary_functions(device, op):
    source = np.abs(A) + 1 if op in POSITIVE else (A / 4 if op in UNIT else A)
    expected = {**UNARY, **POSITIVE, **UNIT}[op](source)
    x = hal.tensor(source, device=device)
    check(device, op, "f32", lambda: getattr(hal, op)(x), expected)
    if runs(device, op, "f32"):
        assert_close(getattr(x, op)().numpy(), expected)


@pytest.mark.parametrize("dtype", ["f64", "f16", "i32", "i64", "u8", "i8"])
def test_add_and_mul_in_other_dtypes(device, dtype):
    if not device.supports(dtype):
        pytest.skip(f"{device.id} has no {dtype}")
    numpy_dtype = {"f64": np.float64, "f16": np.float16, "i32": np.int32, "i64": np.int64,
                   "u8": np.uint8, "i8": np.int8}[dtype]
    x = (np.arange(8) % 5 + 1).astype(numpy_dtype)
    y = (np.arange(8) % 3 + 2).astype(numpy_dtype)
    a, b = hal.tensor(x, device=device), hal.tensor(y, device=device)
    check(device, "add", dtype, lambda: a + b, x + y)
    check(device, "mul", dtype, lambda: a * b, x * y)


def test_operators_with_tensors_numbers_and_arrays(cpu):
    a, b = hal.tensor(A, device=cpu), hal.tensor(B, device=cpu)
    assert_close((a + b).numpy(), A + B)
    assert_close((a - b).numpy(), A - B)
    assert_close((a * b).numpy(), A * B)
    assert_close((a / b).numpy(), A / B)
    assert_close((abs(a) ** 2).numpy(), np.abs(A) ** 2)
    assert_close((-a).numpy(), -A)
    assert_close(abs(a).numpy(), np.abs(A))
    assert_close((a + 1).numpy(), A + 1)
    assert_close((2.5 * a).numpy(), 2.5 * A)
    assert_close((1 - a).numpy(), 1 - A)
    assert_close((1 / b).numpy(), 1 / B)
    assert_close((2 ** abs(a)).numpy(), 2 ** np.abs(A))
    assert_close((a + ROW).numpy(), A + ROW)  # an array beside a tensor is copied in
    assert_close((ROW - a).numpy(), ROW - A)  # NumPy defers to the tensor's __rsub__
    assert (a + 1).dtype == hal.f32 and (a + 1.5).dtype == hal.f32
    i = hal.tensor(np.array([1, 2, 3], dtype=np.int32), device=cpu)
    assert (i + 1).dtype == hal.i32 and (i * 0.5).dtype == hal.f32
    assert ((i > 1) == True).dtype == hal.bool  # noqa: E712 (an elementwise comparison)
    np.testing.assert_array_equal((a < b).numpy(), A < B)
    np.testing.assert_array_equal((a >= 0).numpy(), A >= 0)
    np.testing.assert_array_equal((0 > a).numpy(), 0 > A)
    np.testing.assert_array_equal((a == a).numpy(), np.ones_like(A, dtype=bool))
    np.testing.assert_array_equal((a != b).numpy(), A != B)
    assert {a: 1}[a] == 1  # hashable by identity, as PyTorch's tensors are
    with pytest.raises(TypeError):
        a + "text"


def test_numpy_scalars_beside_a_tensor_count_as_python_numbers(cpu):
    a = hal.tensor(A, device=cpu)
    assert_close((a * np.float32(2)).numpy(), A * 2)
    assert_close((np.float32(2) * a).numpy(), A * 2)  # NumPy defers to Tensor.__rmul__
    assert_close((a - np.float16(0.5)).numpy(), A - 0.5)
    assert_close(hal.add(a, np.int64(1)).numpy(), A + 1)
    assert_close(hal.where(hal.tensor(A > 0, device=cpu), a, np.float32(0)).numpy(),
                 np.where(A > 0, A, 0))
    i = hal.tensor(np.array([1, 2, 3], dtype=np.int32), device=cpu)
    # Of the Python number's kind, as PyTorch promotes them: an int keeps i32, a float is f32.
    assert (i + np.int64(3)).dtype == hal.i32 and (i + np.int64(3)).numpy().tolist() == [4, 5, 6]
    assert (i * np.float64(0.5)).dtype == hal.f32
    assert (i + np.uint8(1)).numpy().tolist() == [2, 3, 4]
    assert (hal.tensor([True, False], device=cpu) == np.bool_(True)).numpy().tolist() == [
        True, False]
    with pytest.raises(TypeError):
        a + np.str_("text")


def test_integers_beside_an_i64_tensor_are_exact(cpu):
    values = np.array([0, 1, -5], dtype=np.int64)
    t = hal.tensor(values, device=cpu)
    big = 2**53 + 1  # a double rounds it to 2**53
    np.testing.assert_array_equal((t + big).numpy(), values + big)
    np.testing.assert_array_equal((big - t).numpy(), big - values)
    np.testing.assert_array_equal(hal.add(t, np.int64(big)).numpy(), values + big)
    np.testing.assert_array_equal((t == big).numpy(), values == big)
    np.testing.assert_array_equal((hal.zeros((2,), dtype="i64", device=cpu) + (2**63 - 1))
                                  .numpy(), np.full(2, 2**63 - 1, dtype=np.int64))
    with pytest.raises(hal.InvalidArgument, match="not a value of i64"):
        t + 2**63


def test_matmul(device):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 5, 3)).astype(np.float32)
    w = rng.standard_normal((3, 4)).astype(np.float32)
    v = rng.standard_normal(3).astype(np.float32)
    tx, tw, tv = (hal.tensor(m, device=device) for m in (x, w, v))
    check(device, "matmul", "f32", lambda: tx @ tw, x @ w)
    check(device, "matmul", "f32", lambda: hal.matmul(tx, tv), x @ v)
    check(device, "matmul", "f32", lambda: tw.transpose(0, 1) @ tx[0].transpose(0, 1),
          w.T @ x[0].T)
    if runs(device, "matmul", "f32"):
        with pytest.raises(hal.InvalidArgument, match=r"\[3, 4\]"):
            tw @ tw


@pytest.mark.parametrize("activation", [None, "relu", "gelu", "tanh", "sigmoid", "silu"])
def test_linear_against_torch(device, activation):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 6, 5)).astype(np.float32)
    w = rng.standard_normal((7, 5)).astype(np.float32)  # [out, in], as torch takes it
    b = rng.standard_normal(7).astype(np.float32)
    act = {None: lambda y: y, "relu": torch.relu, "gelu": torch.nn.functional.gelu,
           "tanh": torch.tanh, "sigmoid": torch.sigmoid, "silu": torch.nn.functional.silu}
    want = act[activation](torch.nn.functional.linear(*map(torch.from_numpy, (x, w, b)))).numpy()
    tx, tw, tb = (hal.tensor(m, device=device) for m in (x, w, b))
    check(device, "matmul", "f32", lambda: hal.linear(tx, tw, tb, activation), want)
    check(device, "matmul", "f32", lambda: hal.linear(tx, tw, activation=activation),
          act[activation](torch.from_numpy(x @ w.T)).numpy())
    if runs(device, "matmul", "f32"):
        with pytest.raises(hal.InvalidArgument, match=r"the bias f32\[5\].*\[7\]"):
            hal.linear(tx, tw, hal.tensor(b[:5], device=device))
        with pytest.raises(hal.InvalidArgument, match="no activation 'softplus'"):
            hal.linear(tx, tw, tb, "softplus")
        with pytest.raises(hal.InvalidArgument, match="linear: activation is 1, not a str"):
            hal.linear(tx, tw, tb, 1)
        with pytest.raises(hal.InvalidArgument, match=r"linear: weight f32\[7\].*must be 2-d"):
            hal.linear(tx, tb)


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "argmax"])
def test_reductions(device, op):
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4) % 7 - 3
    numpy_op = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min,
                "argmax": None}[op]
    x = hal.tensor(data, device=device)
    if op == "argmax":
        check(device, op, "f32", lambda: hal.argmax(x, axis=2), np.argmax(data, axis=2))
        return
    check(device, op, "f32", lambda: getattr(hal, op)(x), numpy_op(data))
    check(device, op, "f32", lambda: getattr(hal, op)(x, axis=(0, 2), keepdim=True),
          numpy_op(data, axis=(0, 2), keepdims=True))
    check(device, op, "f32", lambda: getattr(x, op)(axis=-1), numpy_op(data, axis=-1))


def test_softmax_and_norms(device):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 8)).astype(np.float32)
    w = rng.standard_normal(8).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    t, tw, tb = (hal.tensor(m, device=device) for m in (x, w, b))
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    softmax = e / e.sum(axis=-1, keepdims=True)
    check(device, "softmax", "f32", lambda: hal.softmax(t), softmax)
    check(device, "softmax", "f32", lambda: t.softmax(axis=1), softmax)
    check(device, "log_softmax", "f32", lambda: hal.log_softmax(t, -1), np.log(softmax))
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    check(device, "layer_norm", "f32", lambda: hal.layer_norm(t, [8], tw, tb, eps=1e-5),
          (x - mean) / np.sqrt(var + 1e-5) * w + b)
    check(device, "rms_norm", "f32", lambda: hal.rms_norm(t, (8,), tw, eps=1e-6),
          x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w)


def test_where_and_cast(device):
    cond = A > 0
    c, a, b = (hal.tensor(m, device=device) for m in (cond, A, B))
    check(device, "where", "f32", lambda: hal.where(c, a, b), np.where(cond, A, B))
    check(device, "where", "f32", lambda: hal.where(c, a, 0.0), np.where(cond, A, 0.0))
    check(device, "cast", "f32", lambda: hal.cast(a, "i32"), A.astype(np.int32))


def test_conv_against_a_loop(device):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    bias = rng.standard_normal(3).astype(np.float32)
    expected = np.zeros((1, 3, 3, 3), dtype=np.float32)
    for m in range(3):
        for i in range(3):
            for j in range(3):
                expected[0, m, i, j] = (x[0, :, i:i + 3, j:j + 3] * w[m]).sum() + bias[m]
    tx, tw, tb = (hal.tensor(v, device=device) for v in (x, w, bias))
    check(device, "conv", "f32", lambda: hal.conv(tx, tw, tb), expected)
    check(device, "conv", "f32", lambda: hal.conv(tx, tw, tb, relu=True),
          np.maximum(expected, 0))


def pool_reference(x, kernel, stride, pad, reduce, count_include_pad=False):
    """2-d pooling of x [N, C, H, W] in loops: windows of `kernel` every `stride` over x padded by
    `pad` on every side (-inf for max, left out of an average unless count_include_pad)."""
    n, c, h, w = x.shape
    out_h, out_w = (h + 2 * pad - kernel) // stride + 1, (w + 2 * pad - kernel) // stride + 1
    out = np.zeros((n, c, out_h, out_w), dtype=np.float64)
    for i in range(out_h):
        for j in range(out_w):
            top, left = i * stride - pad, j * stride - pad
            window = x[:, :, max(top, 0):top + kernel, max(left, 0):left + kernel]
            if reduce == "max":
                out[:, :, i, j] = window.max(axis=(2, 3))
            else:
                out[:, :, i, j] = window.sum(axis=(2, 3)) / (
                    kernel * kernel if count_include_pad else window.shape[2] * window.shape[3])
    return out


def test_layer_ops_against_numpy(device):
    """concat, embedding (torch's argument order), dropout, max_pool and avg_pool."""
    a, b = hal.tensor(A, device=device), hal.tensor(B, device=device)
    check(device, "concat", "f32", lambda: hal.concat([a, b]), np.concatenate([A, B]))
    check(device, "concat", "f32", lambda: hal.concat([a, b, a], axis=-1),
          np.concatenate([A, B, A], axis=-1))
    with pytest.raises(hal.InvalidArgument, match="concat: no tensors"):
        hal.concat([])

    table = np.arange(15, dtype=np.float32).reshape(5, 3) / 4
    picks = np.array([[0, 4], [2, 2]])
    weight = hal.tensor(table, device=device)
    for dtype in (np.int64, np.int32):
        indices = hal.tensor(picks.astype(dtype), device=device)
        check(device, "embedding", "f32", lambda: hal.embedding(indices, weight), table[picks])

    x = hal.tensor(np.ones((64,), np.float32), device=device)
    if runs(device, "dropout", "f32"):
        kept = hal.dropout(x, 0.25, seed=7).numpy()
        assert set(np.unique(kept)) <= {0.0, np.float32(1 / 0.75)} and 0 < (kept == 0).sum() < 64
        on_cpu = hal.dropout(hal.tensor(np.ones((64,), np.float32), device="cpu:0"), 0.25, 7)
        on_cpu = on_cpu.numpy()
        np.testing.assert_array_equal(kept, on_cpu)  # Philox's draws: one mask on every device
        assert_close(hal.dropout(x, 0.0, 7).numpy(), np.ones(64))
        assert_close(hal.dropout(x, 1.0, 7).numpy(), np.zeros(64))
    else:
        with pytest.raises(hal.Unsupported, match=f"dropout of .* on {device.id}"):
            hal.dropout(x, 0.25, seed=7)

    grid = np.random.default_rng(3).standard_normal((1, 2, 5, 5)).astype(np.float32)
    t = hal.tensor(grid, device=device)
    check(device, "max_pool", "f32", lambda: hal.max_pool(t, [2, 2]),
          pool_reference(grid, 2, 2, 0, "max"))
    check(device, "max_pool", "f32",
          lambda: hal.max_pool(t, [3, 3], strides=[2, 2], pads_before=[1, 1], pads_after=[1, 1]),
          pool_reference(grid, 3, 2, 1, "max"))
    check(device, "avg_pool", "f32",
          lambda: hal.avg_pool(t, [3, 3], strides=[2, 2], pads_before=[1, 1], pads_after=[1, 1]),
          pool_reference(grid, 3, 2, 1, "avg"))
    check(device, "avg_pool", "f32",
          lambda: hal.avg_pool(t, [3, 3], [2, 2], [1, 1], [1, 1], count_include_pad=True),
          pool_reference(grid, 3, 2, 1, "avg", count_include_pad=True))
    assert hal.max_pool(t, [2, 2], ceil_mode=True).shape == (1, 2, 3, 3)


def test_embedding_gradient_adds_rows_in_order(device):
    """embedding's gradient through autograd: each row of the table the sum of the output
    gradient's rows at its positions (np.add.at), on every device."""
    table = np.random.default_rng(4).standard_normal((6, 3)).astype(np.float32)
    picks = np.array([1, 4, 1, 0, 4, 4, 5])
    scale = np.random.default_rng(5).standard_normal((7, 3)).astype(np.float32)
    weight = hal.tensor(table, device=device).requires_grad_()
    indices = hal.tensor(picks, device=device)
    if not runs(device, "embedding", "f32"):
        with pytest.raises(hal.Unsupported, match=f"embedding of .* on {device.id}"):
            hal.embedding(indices, weight)
        return
    out = hal.embedding(indices, weight)
    (out * hal.tensor(scale, device=device)).sum().backward()
    expected = np.zeros_like(table)
    np.add.at(expected, picks, scale)
    assert_close(weight.grad.numpy(), expected)


def test_fused_elementwise(device):
    a, b = hal.tensor(A, device=device), hal.tensor(B, device=device)
    steps = [("add", [0, 1]), ("relu", [2]), ("mul", [3, 1])]
    check(device, "fused_elementwise", "f32", lambda: hal.fused_elementwise(steps, [a, b]),
          np.maximum(A + B, 0) * B)
    with pytest.raises(hal.InvalidArgument, match="step"):
        hal.fused_elementwise([("add", [0])], [a, b])


def test_ops_refuse_tensors_on_two_devices():
    devices = hal.devices()
    if len(devices) < 2:
        pytest.skip("one device visible")
    a = hal.zeros((2,), device=devices[0])
    b = hal.zeros((2,), device=devices[1])
    with pytest.raises(hal.InvalidArgument) as caught:
        a + b
    assert devices[0].id in str(caught.value) and devices[1].id in str(caught.value)


def test_cpu_fallback_runs_what_a_device_lacks_on_cpu0():
    for device in hal.devices():
        for op in ("erf", "gelu", "sin"):
            if runs(device, op, "f32"):
                continue
            x = hal.tensor(A, device=device)
            with pytest.raises(hal.Unsupported, match=op):
                getattr(hal, op)(x)
            with hal.cpu_fallback():
                y = getattr(hal, op)(x)
            assert y.device == device
            assert_close(y.numpy(), UNARY[op](A))
            with hal.cpu_fallback(False):  # a nested scope may refuse it again
                with pytest.raises(hal.Unsupported):
                    getattr(hal, op)(x)
            return
    pytest.skip("every visible device runs erf, gelu and sin")


def test_type_rules():
    assert hal.promote_types("f32", "i32") == hal.f32
    assert hal.promote_types(hal.f16, hal.bf16) == hal.f32
    assert hal.promote_types("i8", "u8") == hal.i16
    assert hal.broadcast_shapes((2, 1, 4), (3, 1)) == (2, 3, 4)
    with pytest.raises(hal.InvalidArgument, match=r"\[2, 3\]"):
        hal.broadcast_shapes((2, 3), (4,))


INTEGER_NAMES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "bool"]
TORCH_NAMES = ["float32", "float16", "bfloat16", "float64", "int8", "uint8", "int16", "int32"]
TORCH_NAMES += ["int64", "bool"]


def test_integer_promotion_is_numpys():
    # Every pair of integers (and bool) against np.promote_types: u64 with a signed integer is
    # f64 there, which PyTorch refuses.
    for a in INTEGER_NAMES:
        for b in INTEGER_NAMES:
            want = hal.dtype(np.promote_types(a, b))
            got = hal.promote_types(a, b)
            assert got == want, f"{a} with {b}: hal {got}, NumPy {want}"


def test_promotion_is_pytorchs(torch):
    # Every pair of the dtypes this PyTorch has: across categories the higher wins whole
    # (f32 with i32 is f32, where NumPy gives f64).
    for a in TORCH_NAMES:
        for b in TORCH_NAMES:
            want = str(torch.promote_types(getattr(torch, a), getattr(torch, b))).split(".")[1]
            got = hal.promote_types(a, b)
            assert got == hal.dtype(want), f"{a} with {b}: hal {got}, PyTorch {want}"


def test_ops_on_an_explicit_stream_and_in_a_with_block(device):
    stream = hal.Stream(device)
    a = hal.tensor(A, device=device, stream=stream)
    b = hal.add(a, a, stream=stream)
    stream.synchronize()
    assert_close(b.numpy(stream=stream), A + A)
    with stream:
        assert hal.current_stream(device) == stream
        c = a * 3
        assert_close(c.numpy(), A * 3)
    assert hal.current_stream(device) != stream


def test_an_optional_weight_that_is_no_tensor_is_named(cpu):
    x = hal.ones((2, 4), device=cpu)
    cases = [
        (lambda: hal.layer_norm(x, [4], weight="w"), "layer_norm: weight is 'w'"),
        (lambda: hal.layer_norm(x, [4], bias=5), "layer_norm: bias is 5"),
        (lambda: hal.rms_norm(x, [4], weight=[1.0] * 4), r"rms_norm: weight is \[1\.0, "),
        (lambda: hal.conv(x.reshape(1, 2, 4), hal.ones((1, 2, 1), device=cpu), bias="b"),
         "conv: bias is 'b'"),
        (lambda: hal.conv(x.reshape(1, 2, 4), hal.ones((1, 2, 1), device=cpu), residual=np.ones(4)),
         "conv: residual is array"),
    ]
    for call, text in cases:
        with pytest.raises(hal.InvalidArgument, match=text + ".*, not a hal.Tensor or None"):
            call()
    # A required weight is converted by pybind11, whose refusal names the function and argument.
    with pytest.raises(TypeError, match=r"(?s)conv\(\): incompatible function arguments.*weight: "):
        hal.conv(x.reshape(1, 2, 4), "w")
