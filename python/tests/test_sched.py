"""Workloads, the cost model's estimates, and calibration as dicts of schema hal.calibration/1
(cached under HAL_CACHE_DIR, which CTest points into the build tree)."""

import math

import pytest

import hal


def test_workloads_and_estimates(cpu):
    w = hal.Workload.matmul(64, 32, 16)
    assert w.flops == 2 * 64 * 32 * 16 and w.dtype == hal.f32
    custom = hal.Workload("copy", bytes=1 << 20, launches=1, dtype="f16",
                          host_to_device_bytes=4096, device_to_host_bytes=2048,
                          memory_bytes=1 << 21)
    assert custom.name == "copy" and custom.dtype == hal.f16 and custom.bytes == 1 << 20
    assert custom.launches == 1 and custom.memory_bytes == 1 << 21
    assert custom.host_to_device_bytes == 4096 and custom.device_to_host_bytes == 2048
    custom.flops = 10.0
    assert custom.flops == 10.0 and "copy" in repr(custom)
    with_copies = hal.estimate(custom, cpu)
    assert with_copies["transfer_seconds"] >= 0
    estimate = hal.estimate(w, cpu)
    assert estimate["bound"] in ("compute", "memory", "transfer", "launch")
    assert estimate["provenance"] in ("measured", "estimated", "unknown")
    assert estimate["seconds"] is None or estimate["seconds"] > 0
    reference = hal.reference_workload()
    assert reference.flops == 2 * 2048 ** 3


def test_calibration_as_a_dict(cpu):
    measured = hal.calibrate(cpu, quick=True)
    assert measured["schema"] == "hal.calibration/1"
    assert measured["device"] == "cpu:0" and measured["uuid"] == cpu.uuid
    assert measured["matmul"] and measured["matmul"][0]["dtype"] == "f32"
    assert measured["host_to_device_gbps"] > 0 and measured["launch_latency_us"] > 0
    cached = hal.cached_calibration(cpu)
    assert cached is not None and cached["uuid"] == cpu.uuid
    again = hal.calibrate(cpu, quick=True)
    assert again["from_cache"] and again["measured_at"] == cached["measured_at"]
    hal.reload_calibrations()
    assert hal.cached_calibration(cpu)["measured_at"] == cached["measured_at"]
    estimate = hal.estimate(hal.Workload.matmul(512, 512, 512), cpu)
    assert estimate["provenance"] == "measured" and math.isfinite(estimate["seconds"])


def test_selection_ranks_a_workload():
    selection = hal.select(workload=hal.Workload.matmul(512, 512, 512))
    eligible = [c for c in selection.candidates if c["eligible"]]
    assert eligible and eligible[0]["device"] == selection.device
    with pytest.raises(hal.NotFound):
        hal.select(min_tflops=1e9)
