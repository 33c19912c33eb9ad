"""Fixtures of hal's Python tests: the visible devices, NumPy references, and PyTorch when there
is one (its tests skip, saying why, where it is not installed)."""

import os
import pathlib

import numpy as np
import pytest

import hal

DEVICES = hal.devices()
SOURCE_DIR = pathlib.Path(os.environ.get("HAL_SOURCE_DIR", pathlib.Path(__file__).parents[2]))


@pytest.fixture(params=[d.id for d in DEVICES])
def device(request):
    """Each visible device in turn (cpu:0, opencl:0, sim:0 ... as HAL_DEVICES shows them)."""
    return hal.device(request.param)


@pytest.fixture
def cpu():
    return hal.device("cpu:0")


@pytest.fixture(scope="session")
def torch():
    return pytest.importorskip(
        "torch", reason="PyTorch is not installed (Debian: python3-torch)"
    )


@pytest.fixture
def rng():
    return np.random.default_rng(2024)


def runs(device, op, dtype):
    """Whether `device` runs `op` for `dtype` (else hal raises hal.Unsupported for it)."""
    return hal.supports_op(device, op, dtype)


def assert_close(actual, expected, dtype="f32"):
    tolerance = {"f16": 2e-3, "bf16": 1e-2, "f64": 1e-12}.get(str(dtype), 1e-5)
    np.testing.assert_allclose(
        np.asarray(actual, dtype=np.float64),
        np.asarray(expected, dtype=np.float64),
        rtol=tolerance,
        atol=tolerance,
    )
