"""ONNX models from Python: the transformer encoder of models/ (exported from PyTorch) run on
every device against PyTorch's own output, and the errors of loading and running."""

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
