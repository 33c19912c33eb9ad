"""`hal serve` driven with Python's urllib, as a client that knows nothing of hal would: every
endpoint, JSON and binary tensors checked against `hal run` on the same input, malformed
requests, and SIGTERM. CTest sets HAL_CLI (the hal command) and HAL_SERVE_TEST_MODEL (a program
that writes the test's ONNX model)."""
import json
import math
import os
import signal
import struct
import subprocess
import urllib.error
import urllib.request

import numpy as np
import pytest

HAL = os.environ.get("HAL_CLI")
WRITER = os.environ.get("HAL_SERVE_TEST_MODEL")
pytestmark = pytest.mark.skipif(not HAL or not WRITER, reason="run by CTest (HAL_CLI, HAL_SERVE_TEST_MODEL)")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = tmp_path_factory.mktemp("serve")
    model = folder / "mlp.onnx"
    subprocess.run([WRITER, str(model)], check=True, timeout=60)
    arguments = ["--model", f"mlp={model}"]
    for kind in ("log", "half"):  # y = Log(x) and y = Cast(x) to FP16, x[batch, 3]
        subprocess.run([WRITER, str(folder / f"{kind}.onnx"), kind], check=True, timeout=60)
        arguments += ["--model", f"{kind}={folder / f'{kind}.onnx'}"]
    process = subprocess.Popen([HAL, "serve", *arguments, "--port", "0"], stdout=subprocess.PIPE,
                               text=True)
    line = process.stdout.readline()
    assert "listening on http://127.0.0.1:" in line, line
    port = int(line.split("127.0.0.1:")[1].split()[0])
    yield {"url": f"http://127.0.0.1:{port}", "model": model, "folder": folder, "process": process}
    if process.poll() is None:
        process.kill()
        process.wait(timeout=30)


def call(url, body=None, headers=None, method=None):
    """(status, headers, body bytes) of one request; errors are answers too."""
    request = urllib.request.Request(url, data=body, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def hal_run(served, x):
    """The model's outputs from `hal run` on the same input."""
    folder = served["folder"]
    np.save(folder / "x.npy", x)
    subprocess.run([HAL, "run", str(served["model"]), "--input", f"x={folder / 'x.npy'}", "--output",
                    str(folder / "out")], check=True, timeout=120, stdout=subprocess.DEVNULL)
    return np.load(folder / "out" / "y.npy")


def test_health_and_metadata(served):
    url = served["url"]
    assert call(url + "/v2/health/live")[0] == 200
    status, _, body = call(url + "/v2/health/ready")
    assert status == 200 and json.loads(body) == {"ready": True}
    assert json.loads(call(url + "/v2")[2])["name"] == "hal"
    metadata = json.loads(call(url + "/v2/models/mlp")[2])
    assert metadata["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, 4]}]
    assert metadata["outputs"] == [{"name": "y", "datatype": "FP32", "shape": [-1, 3]}]
    assert json.loads(call(url + "/v2/models/mlp/ready")[2])["ready"] is True
    status, headers, body = call(url + "/metrics")
    assert status == 200 and b"# TYPE hal_requests_total counter" in body


def test_json_tensors_equal_hal_run(served):
    x = np.arange(12, dtype=np.float32).reshape(3, 4) / 5 - 1
    request = {"inputs": [{"name": "x", "shape": [3, 4], "datatype": "FP32", "data": x.flatten().tolist()}]}
    status, _, body = call(served["url"] + "/v2/models/mlp/infer", json.dumps(request).encode(),
                           {"Content-Type": "application/json"})
    assert status == 200, body
    output = json.loads(body)["outputs"][0]
    assert output["shape"] == [3, 3] and output["datatype"] == "FP32"
    np.testing.assert_allclose(np.array(output["data"], np.float32).reshape(3, 3), hal_run(served, x),
                               rtol=1e-5, atol=1e-5)


def test_binary_tensors_equal_hal_run(served):
    x = (np.arange(8, dtype=np.float32).reshape(2, 4) - 3) / 2
    header = json.dumps({"inputs": [{"name": "x", "shape": [2, 4], "datatype": "FP32",
                                     "parameters": {"binary_data_size": 32}}],
                         "parameters": {"binary_data_output": True}}).encode()
    status, headers, body = call(served["url"] + "/v2/models/mlp/infer", header + x.tobytes(),
                                 {"Inference-Header-Content-Length": str(len(header)),
                                  "Content-Type": "application/octet-stream"})
    assert status == 200, body
    length = int(headers["Inference-Header-Content-Length"])
    output = json.loads(body[:length])["outputs"][0]
    assert output["parameters"]["binary_data_size"] == 24
    y = np.frombuffer(body[length:], dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(y, hal_run(served, x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("body,status,error", [
    (b"{", 400, "the request body is not valid JSON"),
    (b'{"inputs": [{"name": "q", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]}', 400,
     "inputs[0]: model 'mlp' has no input 'q'"),
    (b'{"inputs": [{"name": "x", "shape": [1, 4], "datatype": "INT64", "data": [1, 2, 3, 4]}]}', 400,
     "inputs[0] ('x'): datatype INT64 does not match the model's FP32"),
    (b'{"inputs": [{"name": "x", "shape": [1, 3], "datatype": "FP32", "data": [1, 2, 3]}]}', 400,
     "inputs[0] ('x'): shape [1, 3] does not match the model's [-1, 4] at dimension 1"),
])
def test_malformed_requests(served, body, status, error):
    got, _, answer = call(served["url"] + "/v2/models/mlp/infer", body, {"Content-Type": "application/json"})
    assert got == status
    assert json.loads(answer) == {"error": error}


def infer_json(served, model, request):
    """The status and the parsed JSON body of an inference request sent as JSON."""
    status, headers, body = call(f"{served['url']}/v2/models/{model}/infer", json.dumps(request).encode(),
                                 {"Content-Type": "application/json"})
    assert "Inference-Header-Content-Length" not in headers, body
    return status, json.loads(body)


def x3(data, datatype="FP32"):
    return {"inputs": [{"name": "x", "shape": [1, len(data)], "datatype": datatype, "data": data}]}


def test_non_finite_outputs_read_back(served):
    """NaN and infinities come back as Triton writes them (NaN, Infinity, -Infinity), which Python's
    json reads; as JSON's null they read back as None, and -inf as nothing a float can be."""
    status, answer = infer_json(served, "log", x3([-1.0, 0.0, 1.0]))
    assert status == 200, answer
    data = answer["outputs"][0]["data"]
    assert math.isnan(data[0]) and data[1] == -math.inf and data[2] == 0.0


def test_half_outputs_are_json_numbers(served):
    """An FP16 output to a client that asked for JSON is JSON numbers (exactly the FP16 values)."""
    status, answer = infer_json(served, "half", x3([0.5, -2.0, 0.1]))
    assert status == 200, answer
    output = answer["outputs"][0]
    assert output["datatype"] == "FP16" and output["shape"] == [1, 3]
    np.testing.assert_array_equal(np.array(output["data"], np.float16),
                                  np.array([0.5, -2.0, 0.1], np.float16))


def test_an_empty_id_is_echoed(served):
    request = dict(x3([1.0, 2.0, 3.0, 4.0]), id="")
    status, answer = infer_json(served, "mlp", request)
    assert status == 200 and answer["id"] == ""


def test_a_number_fp32_cannot_hold_is_refused(served):
    status, answer = infer_json(served, "mlp", x3([1.0, 1e39, 3.0, 4.0]))
    assert status == 400
    assert answer == {"error": "inputs[0] ('x'): data[1] is 1e+39, which FP32 cannot hold (its largest is "
                               "3.4028234663852886e+38)"}


def test_unknown_model_is_404(served):
    status, _, body = call(served["url"] + "/v2/models/other")
    assert status == 404 and json.loads(body) == {"error": "unknown model 'other'"}


def test_sigterm_stops_with_status_0(served):
    process = served["process"]
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 0
    assert "every request answered; stopped" in process.stdout.read()
