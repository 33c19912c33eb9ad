"""ONNX models from Python: the transformer encoder of models/ (exported from PyTorch) run on
every device against PyTorch's own output, and the errors of loading and running."""

import os

import numpy as np
import pytest

import hal
from conftest import SOURCE_DIR, runs

MODELS = SOURCE_DIR / "models"


@pytest.fixture(scope="module")
def model():
    return hal.load_onnx(MODELS / "transformer_encoder.onnx")


def test_what_a_model_declares(model):
    assert model.opset >= 1 and model.node_count > 0
    assert "MatMul" in model.op_types
    [declared] = model.inputs
    assert declared["dtype"] == "f32" and declared["name"]
    assert all(isinstance(d, (int, str)) or d is None for d in declared["shape"])
    assert model.outputs and "nodes" in repr(model)


def test_runs_like_pytorch_on_every_device(model, device):
    # A device that lacks some of the model's ops runs those on cpu:0 (hal.cpu_fallback).
    lacks = [op for op in ("softmax", "matmul", "erf", "layer_norm") if not runs(device, op, "f32")]
    with hal.cpu_fallback(bool(lacks)):
        check_against_pytorch(model, device)


def check_against_pytorch(model, device):
    x = np.load(MODELS / "transformer_encoder.input.npy")
    expected = np.load(MODELS / "transformer_encoder.expected.npy")
    name = model.inputs[0]["name"]
    outputs = model.run({name: hal.tensor(x, device=device)})
    [output] = outputs.values()
    assert output.device == device
    np.testing.assert_allclose(output.numpy(), expected, rtol=1e-4, atol=1e-4)
    # Arrays are copied to the device in the declared dtype.
    again = model.run({name: x.astype(np.float64)}, device=device)
    np.testing.assert_allclose(list(again.values())[0].numpy(), expected, rtol=1e-4, atol=1e-4)


def test_loading_and_running_errors_name_what_is_wrong(model, cpu, tmp_path):
    with pytest.raises(hal.InvalidArgument, match="missing.onnx"):
        hal.load_onnx(tmp_path / "missing.onnx")
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a model")
    with pytest.raises(hal.InvalidArgument, match="broken.onnx"):
        hal.load_onnx(str(broken))
    with pytest.raises(hal.InvalidArgument, match="nonsense"):
        hal.load_onnx_bytes(b"\x08\x07garbage", name="nonsense")
    name = model.inputs[0]["name"]
    with pytest.raises(hal.InvalidArgument, match="no_such_input|" + name):
        model.run({"no_such_input": hal.zeros((1,), device=cpu)})
    with pytest.raises(hal.InvalidArgument, match=name):
        model.run({name: hal.zeros((1, 2, 3, 4, 5), device=cpu)})


# Small ONNX models written field by field (protobuf's wire format), for what an exporter does
# not make: an empty optional output, names that are not UTF-8.
def varint(n):
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number, data):  # length-delimited
    data = data.encode() if isinstance(data, str) else data
    return varint(number << 3 | 2) + varint(len(data)) + data


def number(field_number, n):
    return varint(field_number << 3) + varint(n)


F32 = field(1, number(1, 1))  # TypeProto {tensor_type {elem_type: FLOAT}}
F32_2 = field(1, number(1, 1) + field(2, field(1, number(1, 2))))  # ... shape [2]


def onnx_model(nodes, inputs, outputs):
    """ModelProto of opset 17: nodes as NodeProto bytes, inputs and outputs as (name, type)."""
    graph = b"".join(field(1, node) for node in nodes) + field(2, "g")
    graph += b"".join(field(11, field(1, name) + field(2, kind)) for name, kind in inputs)
    graph += b"".join(field(12, field(1, name) + field(2, kind)) for name, kind in outputs)
    return number(1, 8) + field(8, field(1, "") + number(2, 17)) + field(7, graph)


def test_an_empty_optional_output_is_none(cpu):
    # y = Optional() with no input: an optional that holds no tensor.
    attribute = field(1, "type") + number(20, 13) + field(14, F32)  # type: TYPE_PROTO
    node = field(2, "y") + field(3, "empty") + field(4, "Optional") + field(5, attribute)
    optional_f32 = field(9, field(1, F32))
    model = hal.load_onnx_bytes(onnx_model([node], [], [("y", optional_f32)]), name="optional")
    assert model.outputs[0]["name"] == "y" and model.outputs[0]["optional"]
    assert model.run({}, device=cpu) == {"y": None}


def test_names_that_are_not_utf8_read_as_os_fsdecode_reads_them(cpu):
    x, y = b"x\xff", b"y\xfe"
    node = field(1, x) + field(2, y) + field(4, "Identity")
    model = hal.load_onnx_bytes(onnx_model([node], [(x, F32_2)], [(y, F32_2)]), name="bytes")
    [declared] = model.inputs
    assert declared["name"] == os.fsdecode(x) and model.outputs[0]["name"] == os.fsdecode(y)
    assert model.op_types == ["Identity"]
    array = np.array([1.5, -2.0], dtype=np.float32)
    outputs = model.run({declared["name"]: array}, device=cpu)  # the name goes back as its bytes
    np.testing.assert_array_equal(outputs[os.fsdecode(y)].numpy(), array)


def test_an_initializer_named_as_an_input_is_a_default_a_run_may_replace(cpu):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper
    w = np.array([1, 2, 3], dtype=np.float32)
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])], "defaults",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
         helper.make_tensor_value_info("w", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
        initializer=[numpy_helper.from_array(w, "w")])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    proto.ir_version = 7
    model = hal.load_onnx_bytes(proto.SerializeToString(), name="defaults")
    assert [v["name"] for v in model.inputs] == ["x"]
    assert [v["name"] for v in model.optional_inputs] == ["w"]
    x = np.array([10, 20, 30], dtype=np.float32)
    [y] = model.run({"x": x}, device=cpu).values()
    np.testing.assert_array_equal(y.numpy(), x + w)
    # A float64 array given for it is copied in its declared dtype and replaces the initializer.
    [y] = model.run({"x": x, "w": np.array([0.5, 0.5, 0.5])}, device=cpu).values()
    assert y.dtype == hal.f32
    np.testing.assert_array_equal(y.numpy(), x + 0.5)


@pytest.fixture(scope="module")
def onnx():
    return pytest.importorskip("onnx", reason="ONNX is not installed (Debian: python3-onnx)")


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_grid_sample_samples_as_pytorch_does(onnx, torch, device, mode, rng):
    """GridSample against torch.nn.functional.grid_sample (whose semantics ONNX took), every
    padding with and without align_corners, points far outside X (several reflections)."""
    from onnx import TensorProto, helper

    x = rng.standard_normal((2, 3, 5, 7)).astype(np.float32)
    grid = rng.uniform(-3.5, 3.5, (2, 4, 6, 2)).astype(np.float32)
    grid[0, 0, :3] = [[-1, -1], [1, 1], [0, 0]]  # the corners and the centre exactly
    # Points that are not numbers: PyTorch clamps NaN to 0 where padding clips (and gives NaN
    # where it does not).
    grid[1, 0, :4] = [[np.nan, 0.2], [np.inf, 0.1], [-np.inf, 0.3], [0.2, np.inf]]
    lacks = [op for op in ("embedding", "floor", "round", "where") if not runs(device, op, "f32")]
    for padding in ("zeros", "border", "reflection"):
        for align in (0, 1):
            node = helper.make_node("GridSample", ["x", "grid"], ["y"], mode=mode,
                                    padding_mode=padding, align_corners=align)
            graph = helper.make_graph(
                [node], "grid_sample",
                [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape)),
                 helper.make_tensor_value_info("grid", TensorProto.FLOAT, list(grid.shape))],
                [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 4, 6])])
            proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
            model = hal.load_onnx_bytes(proto.SerializeToString(), name="grid_sample")
            with hal.cpu_fallback(bool(lacks)):
                [got] = model.run({"x": x, "grid": grid}, device=device).values()
            want = torch.nn.functional.grid_sample(
                torch.from_numpy(x), torch.from_numpy(grid), mode=mode, padding_mode=padding,
                align_corners=bool(align)).numpy()
            np.testing.assert_allclose(got.numpy(), want, rtol=2e-5, atol=2e-5, equal_nan=True,
                                       err_msg=f"{mode}, {padding}, align_corners={align}")


def test_max_pool_indices_and_max_unpool_as_pytorch(onnx, torch, device, rng):
    """MaxPool's Indices against torch's max_pool2d(return_indices=True) (whose indices count
    within each [N, C] plane; ONNX's count from the start), and MaxUnpool of them back into X's
    shape."""
    from onnx import TensorProto, helper

    x = rng.standard_normal((2, 3, 9, 8)).astype(np.float32)
    lacks = [op for op in ("embedding", "max", "where", "eq") if not runs(device, op, "f32")]
    for kernel, stride, pad, dilation, ceil in [(3, 2, 1, 1, 0), (2, 2, 0, 1, 1), (3, 1, 1, 2, 0)]:
        pool = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[kernel, kernel],
                                strides=[stride, stride], pads=[pad] * 4,
                                dilations=[dilation, dilation], ceil_mode=ceil)
        unpool = helper.make_node("MaxUnpool", ["y", "i", "shape"], ["z"],
                                  kernel_shape=[kernel, kernel], strides=[stride, stride],
                                  pads=[pad] * 4)
        graph = helper.make_graph(
            [pool, unpool], "pool_unpool",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape)),
             helper.make_tensor_value_info("shape", TensorProto.INT64, [4])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, list("NCHW")),
             helper.make_tensor_value_info("i", TensorProto.INT64, list("NCHW")),
             helper.make_tensor_value_info("z", TensorProto.FLOAT, list("NCHW"))])
        proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])
        model = hal.load_onnx_bytes(proto.SerializeToString(), name="pool_unpool")
        with hal.cpu_fallback(bool(lacks)):
            got = model.run({"x": x, "shape": np.array(x.shape, np.int64)}, device=device)
        values, indices = torch.nn.functional.max_pool2d(
            torch.from_numpy(x), kernel, stride, pad, dilation, bool(ceil), return_indices=True)
        planes = (np.arange(2 * 3).reshape(2, 3, 1, 1) * 9 * 8).astype(np.int64)
        case = f"kernel {kernel}, stride {stride}, pad {pad}, dilation {dilation}, ceil {ceil}"
        np.testing.assert_array_equal(got["y"].numpy(), values.numpy(), err_msg=case)
        np.testing.assert_array_equal(got["i"].numpy(), indices.numpy() + planes, err_msg=case)
        # Unpooled into X's shape (torch's max_unpool2d knows no dilation): each value at its
        # index, the last one where indices repeat.
        unpooled = np.zeros(x.size, np.float32)
        unpooled[(indices.numpy() + planes).ravel()] = values.numpy().ravel()
        np.testing.assert_array_equal(got["z"].numpy(), unpooled.reshape(x.shape), err_msg=case)


def one_node_model(onnx, op, inputs, outputs, opset, **attributes):
    """A model of one `op` node; `inputs` and `outputs` map names to (ONNX type, rank)."""
    from onnx import helper

    def values(declared):
        return [helper.make_tensor_value_info(name, elem, [f"{name}{d}" for d in range(rank)])
                for name, (elem, rank) in declared.items()]

    node = helper.make_node(op, list(inputs), list(outputs), **attributes)
    graph = helper.make_graph([node], op, values(inputs), values(outputs))
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return hal.load_onnx_bytes(proto.SerializeToString(), name=op)


def conv_transpose_reference(x, w, bias, strides, dilations, pads_before, out_shape, groups):
    """ConvTranspose by its definition: x[n, c, j] w[c, o, k] added at h = j s + k d - pad."""
    spatial = len(strides)
    per_group_in, per_group_out = x.shape[1] // groups, w.shape[1]
    y = np.zeros((x.shape[0], per_group_out * groups, *out_shape), np.float64)
    for k in np.ndindex(*w.shape[2:]):
        at = [np.arange(x.shape[2 + i]) * strides[i] + k[i] * dilations[i] - pads_before[i]
              for i in range(spatial)]
        keep = [(h >= 0) & (h < out_shape[i]) for i, h in enumerate(at)]
        for g in range(groups):
            ins = slice(g * per_group_in, (g + 1) * per_group_in)
            outs = slice(g * per_group_out, (g + 1) * per_group_out)
            part = np.einsum("nc...,co->no...", x[:, ins].astype(np.float64),
                             w[(ins, slice(None)) + k].astype(np.float64))
            y[(slice(None), outs) + np.ix_(*[h[kept] for h, kept in zip(at, keep)])] += \
                part[(slice(None), slice(None)) + np.ix_(*[np.flatnonzero(kept) for kept in keep])]
    if bias is not None:
        y += bias.reshape((1, -1) + (1,) * spatial)
    return y


@pytest.mark.parametrize("case", [
    # x shape, kernel, strides, dilations, pads, output_padding, groups, output_shape
    ((2, 4, 7), (3,), (3,), (2,), (1, 2), (1,), 2, None),
    ((2, 6, 5, 4), (4, 3), (2, 3), (1, 2), (1, 0, 2, 1), (1, 0), 3, None),
    ((1, 3, 4, 5), (1, 1), (2, 2), (1, 1), (0, 0, 0, 0), (1, 1), 1, None),  # phases without taps
    ((1, 2, 5, 3), (3, 2), (2, 2), (4, 2), (0, 1, 2, 0), (0, 1), 1, None),  # dilation = k stride
    ((1, 2, 3, 4, 3), (2, 3, 2), (2, 1, 3), (1, 1, 2), (0,) * 6, (0, 0, 1), 1, None),
    ((1, 3, 4, 4), (3, 3), (2, 2), (1, 1), None, (0, 0), 1, (11, 10)),  # negative pads
])
def test_conv_transpose_is_its_definition(onnx, device, case, rng):
    """ConvTranspose (oneDNN's deconvolution on cpu:0 where the window suits it, else a
    convolution per phase of the strides, interleaved, as on the other devices) against its
    definition as a scatter of x times the kernel, with a bias: strides above, below and equal
    to the kernel, dilations sharing a factor with them, groups, output_padding, 1 to 3 spatial
    dimensions, and an output_shape larger than the strides give (pads below zero)."""
    from onnx import TensorProto

    shape, kernel, strides, dilations, pads, output_padding, groups, output_shape = case
    spatial = len(kernel)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((shape[1], 2, *kernel)).astype(np.float32)
    bias = rng.standard_normal(2 * groups).astype(np.float32)
    attributes = dict(strides=list(strides), dilations=list(dilations), group=groups,
                      output_padding=list(output_padding))
    if output_shape is None:
        attributes["pads"] = list(pads)
        before = pads[:spatial]
        out = [strides[i] * (shape[2 + i] - 1) + output_padding[i] +
               dilations[i] * (kernel[i] - 1) + 1 - pads[i] - pads[spatial + i]
               for i in range(spatial)]
    else:  # ONNX's rule: the total padding split with its larger half at the end
        attributes["output_shape"] = list(output_shape)
        total = [strides[i] * (shape[2 + i] - 1) + output_padding[i] +
                 dilations[i] * (kernel[i] - 1) + 1 - output_shape[i] for i in range(spatial)]
        before = [t - t // 2 for t in total]
        out = list(output_shape)
    f32 = (TensorProto.FLOAT, len(shape))
    model = one_node_model(onnx, "ConvTranspose", {"x": f32, "w": f32, "b": (TensorProto.FLOAT, 1)},
                           {"y": f32}, 17, **attributes)
    with hal.cpu_fallback(not runs(device, "concat", "f32")):
        [got] = model.run({"x": x, "w": w, "b": bias}, device=device).values()
    want = conv_transpose_reference(x, w, bias, strides, dilations, before, out, groups)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-4, err_msg=str(case))


def as_parts(z):
    return np.stack((z.real, z.imag), axis=-1)


@pytest.mark.parametrize("length", [1, 7, 12, 35, 64, 97, 360])
def test_dft_is_numpys_fft_at_every_length(onnx, device, length, rng):
    """DFT (four steps of small products, any length: primes, powers of two, others) against
    np.fft: forward and inverse, real and complex input, along either axis, padded or cut by
    dft_length, onesided."""
    from onnx import TensorProto

    f32 = (TensorProto.FLOAT, 4)
    lacks = True  # what a device lacks (sim: casts, batched products) runs on cpu:0
    signal = rng.standard_normal((2, length, 3, 2)).astype(np.float32)
    z = signal[..., 0] + 1j * signal[..., 1]
    cases = [  # attributes, input, dft_length, expected
        (dict(axis=1), signal[..., :1], None, np.fft.fft(signal[..., 0], axis=1)),
        (dict(axis=1), signal, None, np.fft.fft(z, axis=1)),
        (dict(axis=1, inverse=1), signal, None, np.fft.ifft(z, axis=1)),
        (dict(axis=2), signal, None, np.fft.fft(z, axis=2)),
        (dict(axis=-3, onesided=1), signal[..., :1], None,
         np.fft.rfft(signal[..., 0], axis=1)),
        (dict(axis=1), signal, length + 5, np.fft.fft(z, n=length + 5, axis=1)),
        (dict(axis=1), signal, max(length // 2, 1), np.fft.fft(z, n=max(length // 2, 1), axis=1)),
    ]
    for attributes, x, dft_length, want in cases:
        inputs = {"x": f32} | ({"n": (TensorProto.INT64, 0)} if dft_length else {})
        model = one_node_model(onnx, "DFT", inputs, {"y": f32}, 17, **attributes)
        feeds = {"x": np.ascontiguousarray(x)}
        if dft_length:
            feeds["n"] = np.array(dft_length, np.int64)
        with hal.cpu_fallback(lacks):
            [got] = model.run(feeds, device=device).values()
        scale = max(1.0, float(np.abs(want).max()))
        np.testing.assert_allclose(got.numpy(), as_parts(want), rtol=0, atol=2e-5 * scale,
                                   err_msg=f"length {length}, {attributes}, n {dft_length}")


def test_stft_and_mel_weights_are_the_references(onnx, device, rng):
    """STFT against frames, window and np.fft.rfft; MelWeightMatrix against ONNX's reference
    (its test generator's loops)."""
    from onnx import TensorProto

    signal = rng.standard_normal((2, 400, 1)).astype(np.float32)
    window = np.hanning(64).astype(np.float32)
    model = one_node_model(
        onnx, "STFT",
        {"signal": (TensorProto.FLOAT, 3), "step": (TensorProto.INT64, 0),
         "window": (TensorProto.FLOAT, 1)},
        {"y": (TensorProto.FLOAT, 4)}, 17)
    lacks = True
    with hal.cpu_fallback(lacks):
        [got] = model.run({"signal": signal, "step": np.array(24, np.int64), "window": window},
                          device=device).values()
    frames = np.stack([signal[:, f * 24:f * 24 + 64, 0] * window for f in range((400 - 64) // 24 + 1)],
                      axis=1)
    np.testing.assert_allclose(got.numpy(), as_parts(np.fft.rfft(frames, axis=-1)), rtol=0,
                               atol=5e-5)

    inputs = {name: (TensorProto.INT64, 0) for name in ("bins", "n", "rate")}
    inputs |= {"low": (TensorProto.FLOAT, 0), "high": (TensorProto.FLOAT, 0)}
    mel = one_node_model(onnx, "MelWeightMatrix", inputs, {"w": (TensorProto.FLOAT, 2)}, 17)
    for bins, n, rate, low, high in [(8, 16, 8192, 0, 4096), (40, 512, 16000, 20, 7600)]:
        [got] = mel.run({"bins": np.array(bins), "n": np.array(n), "rate": np.array(rate),
                         "low": np.float32(low), "high": np.float32(high)}, device=device).values()
        np.testing.assert_array_equal(got.numpy(), reference_mel_weights(bins, n, rate, low, high))


@pytest.mark.parametrize("parts, step, frame, windowed", [
    (2, 24, 64, False),  # complex, no window: the frames' view goes straight to the DFT
    (1, 100, 64, True),  # frames with gaps between them
    (1, 7, 400, False),  # one frame, the whole signal (its step never taken)
    (2, 2**62, 64, True),  # one frame, a step that would overflow as a stride
])
def test_stft_frames_are_views_of_the_signal(onnx, device, parts, step, frame, windowed, rng):
    """STFT's frames as a strided view of the signal, against frames cut by NumPy and np.fft:
    complex input, no window (frame_length given), gaps between frames, one frame of the whole
    signal, a step too large to be a stride."""
    from onnx import TensorProto, helper

    signal = rng.standard_normal((2, 400, parts)).astype(np.float32)
    window = np.hanning(frame).astype(np.float32)
    feeds = {"signal": signal, "step": np.array(step, np.int64)}
    declared = [helper.make_tensor_value_info("signal", TensorProto.FLOAT, [2, 400, parts]),
                helper.make_tensor_value_info("step", TensorProto.INT64, [])]
    if windowed:
        feeds["window"] = window
        declared.append(helper.make_tensor_value_info("window", TensorProto.FLOAT, [frame]))
        node_inputs = ["signal", "step", "window"]
    else:
        feeds["length"] = np.array(frame, np.int64)
        declared.append(helper.make_tensor_value_info("length", TensorProto.INT64, []))
        node_inputs = ["signal", "step", "", "length"]
    node = helper.make_node("STFT", node_inputs, ["y"], onesided=int(parts == 1))
    graph = helper.make_graph([node], "stft", declared,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", "f", "k", "p"])])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model = hal.load_onnx_bytes(proto.SerializeToString(), name="stft")
    with hal.cpu_fallback(True):  # what a device lacks (sim: casts, batched products)
        [got] = model.run(feeds, device=device).values()
    z = signal[..., 0] + 1j * signal[..., 1] if parts == 2 else signal[..., 0]
    count = (400 - frame) // step + 1
    frames = np.stack([z[:, f * step:f * step + frame] for f in range(count)], axis=1)
    if windowed:
        frames = frames * window
    want = np.fft.fft(frames, axis=-1) if parts == 2 else np.fft.rfft(frames, axis=-1)
    np.testing.assert_allclose(got.numpy(), as_parts(want), rtol=0,
                               atol=2e-5 * max(1.0, float(np.abs(want).max())))


def reference_mel_weights(bins, n, rate, low, high):
    """ONNX's MelWeightMatrix test generator (onnx/backend/test/case/node/melweightmatrix.py)."""
    points = np.arange(0, bins + 2)
    low_mel = 2595 * np.log10(1 + np.float32(low) / 700)
    step = (2595 * np.log10(1 + np.float32(high) / 700) - low_mel) / points.shape[0]
    points = 700 * (np.power(10, (points * step + low_mel) / 2595) - 1)
    points = (((n + 1) * points) // rate).astype(int)
    out = np.zeros((n // 2 + 1, bins))
    for i in range(bins):
        left, centre, right = points[i], points[i + 1], points[i + 2]
        if centre == left:
            out[centre, i] = 1
        else:
            for j in range(left, centre + 1):
                out[j, i] = (j - left) / (centre - left)
        for j in range(centre, right):
            out[j, i] = (right - j) / (right - centre)
    return out.astype(np.float32)


def reference_roi_align(x, rois, images, out_h, out_w, sampling, scale, half_pixel, mode):
    """onnxruntime's RoiAlign (and torchvision's, for avg), point by point."""
    _, channels, height, width = x.shape
    out = np.zeros((len(rois), channels, out_h, out_w), np.float64)
    offset = 0.5 if half_pixel else 0.0
    for r, (x1, y1, x2, y2) in enumerate(rois.astype(np.float64)):
        sx, sy = x1 * scale - offset, y1 * scale - offset
        rw, rh = x2 * scale - offset - sx, y2 * scale - offset - sy
        if not half_pixel:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / out_h, rw / out_w
        gh = sampling if sampling > 0 else int(np.ceil(rh / out_h))
        gw = sampling if sampling > 0 else int(np.ceil(rw / out_w))
        image = x[images[r]].astype(np.float64)
        for ph in range(out_h):
            for pw in range(out_w):
                values = []
                for iy in range(gh):
                    for ix in range(gw):
                        y = sy + ph * bh + (iy + 0.5) * bh / gh
                        xx = sx + pw * bw + (ix + 0.5) * bw / gw
                        if y < -1 or y > height or xx < -1 or xx > width:
                            values.append(np.zeros((4, channels)))
                            continue
                        y, xx = max(y, 0.0), max(xx, 0.0)
                        yl, xl = int(y), int(xx)
                        yh, xh = yl + 1, xl + 1
                        if yl >= height - 1:
                            yh = yl = height - 1
                            y = float(yl)
                        if xl >= width - 1:
                            xh = xl = width - 1
                            xx = float(xl)
                        ly, lx = y - yl, xx - xl
                        hy, hx = 1 - ly, 1 - lx
                        values.append(np.stack([hy * hx * image[:, yl, xl], hy * lx * image[:, yl, xh],
                                                ly * hx * image[:, yh, xl], ly * lx * image[:, yh, xh]]))
                if not values:
                    continue
                taps = np.stack(values)  # [points, 4, C]
                if mode == "max":
                    out[r, :, ph, pw] = taps.max(axis=(0, 1))
                else:
                    out[r, :, ph, pw] = taps.sum(axis=1).sum(axis=0) / max(gh * gw, 1)
    return out


@pytest.mark.parametrize("mode", ["avg", "max"])
def test_roi_align_is_onnxruntimes(onnx, device, mode, rng):
    """RoiAlign against onnxruntime's algorithm in NumPy: both coordinate transforms, fixed and
    adaptive sampling, a scale, regions over two images, off the edge and of no size."""
    from onnx import TensorProto

    x = rng.standard_normal((2, 3, 11, 13)).astype(np.float32)
    rois = np.array([[0, 0, 9, 9], [2.5, 1, 30, 7], [-4, -3, 3, 2], [5, 5, 5, 5], [1, 2, 20, 18]],
                    np.float32)
    images = np.array([0, 1, 0, 1, 1], np.int64)
    lacks = [op for op in ("embedding", "sum", "max", "where") if not runs(device, op, "f32")]
    for transform, sampling, scale in [("half_pixel", 2, 1.0), ("output_half_pixel", 0, 0.5),
                                       ("half_pixel", 0, 0.7)]:
        model = one_node_model(
            onnx, "RoiAlign",
            {"x": (TensorProto.FLOAT, 4), "rois": (TensorProto.FLOAT, 2),
             "b": (TensorProto.INT64, 1)},
            {"y": (TensorProto.FLOAT, 4)}, 16, mode=mode, output_height=3, output_width=4,
            sampling_ratio=sampling, spatial_scale=scale, coordinate_transformation_mode=transform)
        with hal.cpu_fallback(bool(lacks)):
            [got] = model.run({"x": x, "rois": rois, "b": images}, device=device).values()
        want = reference_roi_align(x, rois, images, 3, 4, sampling, scale,
                                   transform == "half_pixel", mode)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5,
                                   err_msg=f"{transform}, sampling {sampling}, scale {scale}")


def test_roi_align_in_chunks_equals_one_region_at_a_time(onnx, cpu, rng):
    """Regions whose taps pass 2^25 elements are aligned in chunks: each region's result is
    what it gives alone."""
    from onnx import TensorProto

    x = rng.standard_normal((1, 64, 20, 20)).astype(np.float32)
    rois = rng.uniform(0, 19, (60, 4)).astype(np.float32)  # 42 a chunk
    rois[:, 2:] = np.maximum(rois[:, :2], rois[:, 2:])
    model = one_node_model(
        onnx, "RoiAlign",
        {"x": (TensorProto.FLOAT, 4), "rois": (TensorProto.FLOAT, 2), "b": (TensorProto.INT64, 1)},
        {"y": (TensorProto.FLOAT, 4)}, 16, output_height=7, output_width=7, sampling_ratio=8)
    [together] = model.run({"x": x, "rois": rois, "b": np.zeros(60, np.int64)}, device=cpu).values()
    for r in (0, 41, 42, 59):
        [alone] = model.run({"x": x, "rois": rois[r:r + 1], "b": np.zeros(1, np.int64)},
                            device=cpu).values()
        np.testing.assert_array_equal(together.numpy()[r], alone.numpy()[0], err_msg=f"region {r}")


def test_random_ops_draw_what_they_say(onnx, device):
    """RandomUniform, RandomNormal, their -Like forms, Bernoulli, Multinomial and Dropout in
    training mode: each draw's statistics within five standard errors of its distribution's; a
    seed repeats its sequence from one load to the next, each run drawing afresh (ONNX's own
    data holds NumPy's draws, which no other generator reproduces)."""
    from onnx import TensorProto

    f32, f64 = TensorProto.FLOAT, TensorProto.DOUBLE
    n = 100_000
    with hal.cpu_fallback(True):
        def uniform():
            return one_node_model(onnx, "RandomUniform", {}, {"y": (f32, 2)}, 1,
                                  shape=[n // 100, 100], low=-2.0, high=3.0, seed=5.0)

        seeded = uniform()
        [a], [b] = (seeded.run({}, device=device).values() for _ in range(2))
        a = a.numpy()
        assert a.min() >= -2 and a.max() < 3 and abs(a.mean() - 0.5) < 5 * 5 / np.sqrt(12 * n)
        # A seed repeats its sequence from one load to the next; each run draws afresh.
        assert not np.array_equal(a, b.numpy())
        [again] = uniform().run({}, device=device).values()
        np.testing.assert_array_equal(a, again.numpy())
        unseeded = one_node_model(onnx, "RandomNormal", {}, {"y": (f32, 1)}, 1, shape=[n],
                                  mean=1.0, scale=2.0)
        [c], [d] = (unseeded.run({}, device=device).values() for _ in range(2))
        c = c.numpy()
        assert abs(c.mean() - 1) < 5 * 2 / np.sqrt(n) and abs(c.std() - 2) < 0.05
        assert not np.array_equal(c, d.numpy())  # no seed: fresh draws each run
        like = one_node_model(onnx, "RandomNormalLike", {"x": (f64, 1)}, {"y": (f64, 1)}, 1, seed=1.0)
        [e] = like.run({"x": np.zeros(n)}, device=device).values()
        assert e.numpy().dtype == np.float64 and abs(e.numpy().mean()) < 5 / np.sqrt(n)

        bernoulli = one_node_model(onnx, "Bernoulli", {"p": (f32, 1)}, {"y": (f32, 1)}, 15, seed=3.0)
        p = np.repeat(np.array([0.1, 0.5, 0.9], np.float32), n // 3)
        [y] = bernoulli.run({"p": p}, device=device).values()
        y = y.numpy().reshape(3, -1)
        assert set(np.unique(y)) <= {0.0, 1.0}
        for probability, row in zip((0.1, 0.5, 0.9), y):
            assert abs(row.mean() - probability) < 5 * np.sqrt(probability * (1 - probability) / row.size)

        multinomial = one_node_model(onnx, "Multinomial", {"x": (f32, 2)}, {"y": (TensorProto.INT64, 2)},
                                     7, sample_size=n // 10, seed=2.0, dtype=TensorProto.INT64)
        logits = np.log(np.array([[0.1, 0.2, 0.3, 0.4]], np.float32))
        [picks] = multinomial.run({"x": logits}, device=device).values()
        counts = np.bincount(picks.numpy().ravel(), minlength=4) / (n // 10)
        for got, want in zip(counts, (0.1, 0.2, 0.3, 0.4)):
            assert abs(got - want) < 5 * np.sqrt(want * (1 - want) / (n // 10)), counts

        dropout = one_node_model(onnx, "Dropout", {"x": (f32, 2), "r": (f32, 0), "t": (TensorProto.BOOL, 0)},
                                 {"y": (f32, 2), "mask": (TensorProto.BOOL, 2)}, 13, seed=7)
        feeds = {"x": np.ones((200, 500), np.float32), "r": np.float32(0.3), "t": np.array(True)}
        first, second = (dropout.run(feeds, device=device) for _ in range(2))
        kept = first["mask"].numpy()
        assert abs(kept.mean() - 0.7) < 5 * np.sqrt(0.21 / kept.size)
        np.testing.assert_allclose(first["y"].numpy(), np.where(kept, 1 / 0.7, 0), rtol=1e-6)
        assert not np.array_equal(kept, second["mask"].numpy())  # a step drops others


def test_det_is_numpys(onnx, device, rng):
    """Det of a batch of matrices, a singular one and 1 x 1 ones among them, against NumPy's."""
    from onnx import TensorProto

    model = one_node_model(onnx, "Det", {"x": (TensorProto.FLOAT, 4)}, {"y": (TensorProto.FLOAT, 2)}, 11)
    for n in (1, 2, 5):
        x = rng.standard_normal((3, 2, n, n)).astype(np.float32)
        x[0, 0, 0] = 0 if n == 1 else x[0, 0, 0]
        if n > 1:
            x[0, 0, 1] = 2 * x[0, 0, 0]  # singular: its determinant is 0
        [got] = model.run({"x": x}, device=device).values()
        np.testing.assert_allclose(got.numpy(), np.linalg.det(x.astype(np.float64)), rtol=1e-5,
                                   atol=1e-6, err_msg=f"n = {n}")


def test_long_dfts_multiply_their_twiddles_in_and_refuse_past_2_to_the_21(onnx, cpu, rng):
    """With fewer rows than 10 a point of L1 (or past 2^24 elements of folded matrices) the
    twiddles are multiplied in (O(L) memory); a length past what four steps or Bluestein's
    convolution take is refused by name, not given a dense matrix."""
    from onnx import TensorProto

    model = one_node_model(onnx, "DFT", {"x": (TensorProto.FLOAT, 3)}, {"y": (TensorProto.FLOAT, 3)},
                           17, axis=1)
    signal = rng.standard_normal((1, 65536, 2)).astype(np.float32)
    [got] = model.run({"x": signal}, device=cpu).values()
    want = np.fft.fft(signal[..., 0].astype(np.float64) + 1j * signal[..., 1], axis=1)
    np.testing.assert_allclose(got.numpy(), as_parts(want), rtol=0, atol=2e-5 * np.abs(want).max())
    # A prime above 2^21, and a power of two whose four steps leave 4096 points (2048 x 4096).
    for length, points in [(2097169, 8388608), (2**23, 16777216)]:
        with pytest.raises(hal.Unsupported, match=rf"a DFT of length {length} is not supported \(.*would take "
                                                  rf"{points} points here\)"):
            model.run({"x": np.zeros((1, length, 1), np.float32)}, device=cpu)


@pytest.mark.parametrize("rows", [4, 400])
def test_onesided_dfts_compute_only_their_bins(onnx, device, rows, rng):
    """A onesided transform of 1156 = 34 x 34 points, whose first 579 bins need 18 of each
    residue's 34 k1 (32, rounded up to 16), with the twiddles multiplied in (4 rows) or folded
    into per-residue matrices (400 rows), against np.fft.rfft: 579 bins, each right (a k1 too
    few loses the last bin)."""
    from onnx import TensorProto

    signal = rng.standard_normal((rows, 1156, 1)).astype(np.float32)
    model = one_node_model(onnx, "DFT", {"x": (TensorProto.FLOAT, 3)}, {"y": (TensorProto.FLOAT, 3)},
                           17, axis=1, onesided=1)
    with hal.cpu_fallback(True):  # what a device lacks (sim: casts, batched products)
        [got] = model.run({"x": signal}, device=device).values()
    want = np.fft.rfft(signal[..., 0].astype(np.float64), axis=1)
    assert got.shape == (rows, 579, 2)
    np.testing.assert_allclose(got.numpy(), as_parts(want), rtol=0, atol=2e-5 * np.abs(want).max())


@pytest.mark.parametrize("length", [401, 4099, 2 * 2053, 65537])
def test_dfts_of_large_primes_take_bluesteins_convolution(onnx, cpu, length, rng):
    """Bluestein's chirp convolution of a power-of-two length, against np.fft (forward and
    inverse, real and complex input, onesided, f32 and f64) for a prime above the dense
    matrices' 2048 points (4099, 65537), a length with such a factor (2 x 2053), and a prime
    above 128 with fewer rows than half its length (401). Only the values are checked: a dense
    path would pass too, where it could take the length."""
    from onnx import TensorProto

    signal = rng.standard_normal((2, length, 2))
    z = signal[..., 0] + 1j * signal[..., 1]
    cases = [  # attributes, input, expected
        (dict(axis=1), signal, np.fft.fft(z, axis=1)),
        (dict(axis=1, inverse=1), signal, np.fft.ifft(z, axis=1)),
        (dict(axis=1, onesided=1), signal[..., :1], np.fft.rfft(signal[..., 0], axis=1)),
    ]
    for element, dtype, tolerance in [(TensorProto.FLOAT, np.float32, 2e-5),
                                      (TensorProto.DOUBLE, np.float64, 1e-12)]:
        for attributes, x, want in cases:
            model = one_node_model(onnx, "DFT", {"x": (element, 3)}, {"y": (element, 3)}, 17,
                                   **attributes)
            [got] = model.run({"x": np.ascontiguousarray(x, dtype)}, device=cpu).values()
            np.testing.assert_allclose(got.numpy(), as_parts(want), rtol=0,
                                       atol=tolerance * np.abs(want).max(),
                                       err_msg=f"length {length}, {attributes}, {dtype.__name__}")


def test_bluesteins_convolution_runs_on_every_device(onnx, device, rng):
    """A prime length above 128 with few rows takes Bluestein's convolution (products, casts,
    elementwise ops and a pad) on each device, against np.fft, forward and inverse."""
    from onnx import TensorProto

    signal = rng.standard_normal((2, 401, 2)).astype(np.float32)
    z = signal[..., 0] + 1j * signal[..., 1]
    for attributes, want in [(dict(axis=1), np.fft.fft(z, axis=1)),
                             (dict(axis=1, inverse=1), np.fft.ifft(z, axis=1))]:
        model = one_node_model(onnx, "DFT", {"x": (TensorProto.FLOAT, 3)},
                               {"y": (TensorProto.FLOAT, 3)}, 17, **attributes)
        with hal.cpu_fallback(True):  # what a device lacks (sim: casts, batched products)
            [got] = model.run({"x": signal}, device=device).values()
        np.testing.assert_allclose(got.numpy(), as_parts(want), rtol=0,
                                   atol=2e-5 * np.abs(want).max(), err_msg=f"{attributes}")


def test_edges_of_roi_align_mel_weights_and_multinomial(onnx, cpu):
    """An inverted region aligns to zeros (onnxruntime's loops run no times); an upper edge that
    maps to the last bin is the reference's; a NaN logit is never drawn, -inf never, +inf always."""
    from onnx import TensorProto

    roi = one_node_model(
        onnx, "RoiAlign",
        {"x": (TensorProto.FLOAT, 4), "rois": (TensorProto.FLOAT, 2), "b": (TensorProto.INT64, 1)},
        {"y": (TensorProto.FLOAT, 4)}, 16, output_height=3, output_width=2)
    [y] = roi.run({"x": np.ones((1, 2, 10, 10), np.float32),
                   "rois": np.array([[8, 8, 2, 2], [8, 1, 2, 9]], np.float32),
                   "b": np.zeros(2, np.int64)}, device=cpu).values()
    np.testing.assert_array_equal(y.numpy(), np.zeros((2, 2, 3, 2)))

    inputs = {name: (TensorProto.INT64, 0) for name in ("bins", "n", "rate")}
    inputs |= {"low": (TensorProto.FLOAT, 0), "high": (TensorProto.FLOAT, 0)}
    mel = one_node_model(onnx, "MelWeightMatrix", inputs, {"w": (TensorProto.FLOAT, 2)}, 17)
    [w] = mel.run({"bins": np.array(8), "n": np.array(16), "rate": np.array(8000),
                   "low": np.float32(0), "high": np.float32(5500)}, device=cpu).values()
    np.testing.assert_array_equal(w.numpy(), reference_mel_weights(8, 16, 8000, 0, 5500))

    draw = one_node_model(onnx, "Multinomial", {"x": (TensorProto.FLOAT, 2)},
                          {"y": (TensorProto.INT64, 2)}, 7, sample_size=200, seed=4.0,
                          dtype=TensorProto.INT64)
    logits = np.array([[0, np.nan, 0, -np.inf], [0, np.inf, 0, 0]], np.float32)
    [picks] = draw.run({"x": logits}, device=cpu).values()
    picks = picks.numpy()
    assert set(picks[0]) == {0, 2} and set(picks[1]) == {1}


def test_constant_dropout_folds_only_in_inference(onnx):
    """Dropout of a constant folds away in inference; in training mode it draws each run."""
    from onnx import TensorProto, helper, numpy_helper

    constants = [numpy_helper.from_array(np.ones((2, 2), np.float32), "c"),
                 numpy_helper.from_array(np.array(True), "t"),
                 numpy_helper.from_array(np.array(0.5, np.float32), "r")]
    value = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [2, 2])
    for training, kept in ((False, ["Add"]), (True, ["Add", "Dropout"])):
        dropout = helper.make_node("Dropout", ["c", "r", "t"] if training else ["c"], ["d"])
        graph = helper.make_graph([dropout, helper.make_node("Add", ["d", "x"], ["y"])], "g",
                                  [value("x")], [value("y")], constants)
        model = hal.load_onnx_bytes(
            helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString(),
            name="dropout")
        assert sorted(model.op_types) == kept


def test_sizes_that_wrap_or_mistyped_updates_are_refused_naming_the_node(onnx, cpu):
    """Sizes near 2^62 wrapped products to 0 and ops wrote past empty buffers (Resize's cubic
    plan, MelWeightMatrix's matrix); a split summing round to the axis' length was accepted;
    updates of another dtype were copied in as data's bytes."""
    from onnx import TensorProto

    from onnx import helper

    f32, i64 = TensorProto.FLOAT, TensorProto.INT64
    for mode in ("nearest", "linear", "cubic"):
        node = helper.make_node("Resize", ["x", "", "", "s"], ["z"], mode=mode)
        graph = helper.make_graph([node], "resize", [helper.make_tensor_value_info("x", f32, [4]),
                                  helper.make_tensor_value_info("s", i64, [1])],
                                  [helper.make_tensor_value_info("z", f32, ["n"])])
        resize = hal.load_onnx_bytes(helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString(), name="resize")
        with pytest.raises(hal.InvalidArgument, match=r"Resize.*has more than 2\^34 elements"):
            resize.run({"x": np.arange(4, dtype=np.float32), "s": np.array([1 << 62])},
                       device=cpu)

    scalars = {name: (i64, 0) for name in ("bins", "n", "rate")}
    scalars.update({"low": (f32, 0), "high": (f32, 0)})
    mel = one_node_model(onnx, "MelWeightMatrix", scalars, {"w": (f32, 2)}, 17)
    with pytest.raises(hal.InvalidArgument, match="make a matrix of more than 2\\^28 elements"):
        mel.run({"bins": np.array(16), "n": np.array((1 << 61) - 2), "rate": np.array(1 << 61),
                 "low": np.float32(0), "high": np.float32(1)}, device=cpu)

    split = one_node_model(onnx, "SplitToSequence", {"x": (f32, 1), "split": (i64, 1)},
                           {"parts": (f32, 1)}, 17)
    huge = (1 << 63) - 1
    with pytest.raises(hal.InvalidArgument, match="has a size past the axis' 2"):
        split.run({"x": np.array([0, 1], np.float32), "split": np.array([huge, huge, 4])},
                  device=cpu)

    scatter = one_node_model(onnx, "ScatterElements",
                             {"data": (f32, 1), "i": (i64, 1), "u": (TensorProto.INT32, 1)},
                             {"y": (f32, 1)}, 13)
    with pytest.raises(hal.InvalidArgument, match="updates of i32 for data of f32"):
        scatter.run({"data": np.zeros(3, np.float32), "i": np.array([1]),
                     "u": np.array([7], np.int32)}, device=cpu)


def test_a_region_too_large_to_sample_adaptively_is_refused(onnx, cpu):
    """RoiAlign's adaptive sampling keeps a region's ceil(extent / bins)^2 points a bin on the
    host: a region of 1e6 x 1e6 pixels was 1e12 points, taken until memory ran out."""
    from onnx import TensorProto

    f32 = TensorProto.FLOAT
    align = one_node_model(onnx, "RoiAlign", {"x": (f32, 4), "rois": (f32, 2),
                                              "bi": (TensorProto.INT64, 1)},
                           {"z": (f32, 4)}, 16, output_height=1, output_width=1)
    feeds = {"x": np.ones((1, 1, 4, 4), np.float32), "bi": np.array([0])}
    with pytest.raises(hal.InvalidArgument, match=r"roi 0 spans 1e\+06 x 1e\+06 pixels: 1e\+12"):
        align.run({**feeds, "rois": np.array([[0, 0, 1e6, 1e6]], np.float32)}, device=cpu)
    [z] = align.run({**feeds, "rois": np.array([[0, 0, 3, 3]], np.float32)}, device=cpu).values()
    np.testing.assert_allclose(z.numpy(), np.ones((1, 1, 1, 1)))
