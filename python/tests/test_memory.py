"""The caching allocators from Python: statistics and snapshots as dicts, limits (as numbers
and as sizes people write), out of memory under a limit, the cache emptied."""

import gc
import os
import subprocess
import sys
import textwrap

import pytest

import hal

STAT_KEYS = {"allocated_bytes", "reserved_bytes", "active_bytes", "requested_bytes"}


def test_statistics_follow_allocations(device):
    gc.collect()
    hal.synchronize()  # earlier tests' buffers go back first: only this test's allocations count
    device.empty_cache()
    device.reset_peak_memory_stats()
    before = device.memory_stats()
    assert set(before) >= STAT_KEYS | {"num_allocs", "num_frees", "cache_hits", "num_ooms"}
    t = hal.zeros((1 << 16,), device=device)  # 256 KiB
    during = device.memory_stats()
    assert during["allocated_bytes"]["current"] >= before["allocated_bytes"]["current"] + (1 << 18)
    assert during["num_allocs"] == before["num_allocs"] + 1
    assert during["requested_bytes"]["peak"] >= 1 << 18
    del t
    hal.synchronize(device)
    after = device.memory_stats()
    assert after["allocated_bytes"]["current"] <= during["allocated_bytes"]["current"] - (1 << 18)
    assert after["allocated_bytes"]["peak"] >= 1 << 18


def test_snapshot_lists_segments_and_blocks(device):
    keep = hal.zeros((1024,), device=device)
    snapshot = device.memory_snapshot()
    assert snapshot["device"] == device.id and snapshot["kind"] == "device"
    assert snapshot["segments"]
    for segment in snapshot["segments"]:
        assert sum(block["size"] for block in segment["blocks"]) == segment["size"]
    assert any(block["allocated"] for s in snapshot["segments"] for block in s["blocks"])
    del keep


def test_a_limit_makes_allocations_out_of_memory(cpu):
    try:
        cpu.set_memory_limit("64M")
        assert cpu.memory_limit() == 64 << 20
        with pytest.raises(hal.OutOfMemory) as caught:
            hal.empty((128 << 20,), dtype="u8", device=cpu)
        assert "limit" in str(caught.value)
        assert cpu.memory_stats()["num_ooms"] >= 1
        cpu.set_memory_limit(1 << 40)
        assert cpu.memory_limit() == 1 << 40
        with pytest.raises(hal.InvalidArgument, match="memory limit"):
            cpu.set_memory_limit("a lot")
        for bad in (-1, 0, 2**64):  # 0 would be "no limit", silently
            with pytest.raises(hal.InvalidArgument, match="not a positive int64; give None"):
                cpu.set_memory_limit(bad)
            assert cpu.memory_limit() == 1 << 40
        with pytest.raises(hal.InvalidArgument, match="1.5 is not an int"):
            cpu.set_memory_limit(1.5)
    finally:
        cpu.set_memory_limit(None)
    assert cpu.memory_limit() is None


def test_a_limit_written_as_a_size_is_at_least_a_byte(cpu):
    # As a number, 0 would lift the limit: as a size it is refused the same way, with the range.
    try:
        cpu.set_memory_limit("1K")
        for bad in ("0", "0B", "0.4", "-1K"):
            with pytest.raises(hal.InvalidArgument,
                               match=rf"memory limit: '{bad}' is out of range \(1 B to "):
                cpu.set_memory_limit(bad)
            assert cpu.memory_limit() == 1024
    finally:
        cpu.set_memory_limit(None)
    assert cpu.memory_limit() is None


def test_the_cache_is_returned(cpu):
    t = hal.zeros((1 << 20,), device=cpu)
    del t
    hal.synchronize(cpu)
    cpu.empty_cache()
    stats = cpu.memory_stats()
    assert stats["reserved_bytes"]["current"] >= stats["allocated_bytes"]["current"]
    assert cpu.memory_stats("pinned_host")["allocated_bytes"]["current"] >= 0


def test_an_allocation_past_the_largest_is_an_out_of_memory_it_counts(device):
    # Refused before the allocator once, so num_ooms did not move; a refusal is no cache miss.
    largest = device.info["limits"]["max_allocation_bytes"]
    if not 0 < largest < 1 << 60:
        pytest.skip(f"{device.id} states no largest allocation")
    gc.collect()
    before = device.memory_stats()
    with pytest.raises(hal.OutOfMemory, match="largest allocation"):
        hal.empty((largest // 4 + 1,), dtype="f32", device=device)
    after = device.memory_stats()
    assert after["num_ooms"] == before["num_ooms"] + 1
    assert after["cache_misses"] == before["cache_misses"]
    assert after["num_allocs"] == before["num_allocs"]


def test_a_refusal_by_a_plugin_names_its_device_once():
    # sim's own message names the device too ("sim:0: cannot allocate ..."): said once.
    code = """
        import hal
        sim = hal.device("sim:0")
        held = hal.empty((10 << 20,), dtype="f32", device=sim)  # 40 MiB of 64
        before = sim.memory_stats()
        try:
            hal.empty((10 << 20,), dtype="f32", device=sim)
        except hal.OutOfMemory as error:
            print(error)
        after = sim.memory_stats()
        for key in ("num_ooms", "cache_misses"):
            print(after[key] - before[key], end=" ")
        """
    env = dict(os.environ, HAL_SIM_CONFIG="devices=1,memory=64M", HAL_DEVICES="cpu:*;sim:*")
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    message, counts = result.stdout.strip().splitlines()
    assert "the backend refused it: sim:0: allocate 41943040 bytes: cannot allocate" in message
    assert message.count("sim:0:") == 1, message
    assert counts.split() == ["1", "0"]  # one out-of-memory, no cache miss
