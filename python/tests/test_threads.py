"""Python threads calling into hal at once: each its own work on shared devices, streams and
tensors, DLPack memory handed back from hal's worker threads (which take the GIL to do it)
while other threads wait in hal without it. Every wait is bounded: a deadlock fails the test."""

import gc
import threading

import numpy as np

import hal
from conftest import DEVICES
from dlpack_capsules import Producer

THREADS = 8
ROUNDS = 25


def run_threads(work):
    errors = []

    def guarded(index):
        try:
            work(index)
        except BaseException as error:  # reported below, with its thread
            errors.append((index, repr(error)))

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not [t for t in threads if t.is_alive()], "a thread is stuck in hal"
    assert not errors, errors


def test_threads_run_ops_on_every_device_at_once():
    shared = {d.id: hal.tensor(np.arange(32, dtype=np.float32), device=d) for d in DEVICES}

    def work(index):
        for round_ in range(ROUNDS):
            device = DEVICES[(index + round_) % len(DEVICES)]
            x = hal.full((32,), float(index), device=device)
            y = (x + shared[device.id]) * 2
            np.testing.assert_array_equal(y.numpy(), (np.arange(32) + index) * 2)

    run_threads(work)


def test_threads_on_their_own_streams_and_the_default_one(device):
    def work(index):
        stream = hal.Stream(device) if index % 2 else None
        for round_ in range(ROUNDS):
            x = hal.full((16,), float(round_), device=device, stream=stream)
            y = hal.mul(x, x, stream=stream)
            if stream is not None:
                stream.synchronize()
            else:
                hal.synchronize(device)
            np.testing.assert_array_equal(y.numpy(stream=stream), np.full(16, round_ * round_))

    run_threads(work)


def test_dlpack_memory_handed_back_from_workers_while_threads_wait(cpu):
    producers = []
    lock = threading.Lock()

    def work(index):
        for round_ in range(ROUNDS):
            producer = Producer(np.full((64,), float(index), dtype=np.float32))
            with lock:
                producers.append(producer)
            t = hal.from_dlpack(producer.capsule())
            results = [t + float(round_) for _ in range(4)]  # enqueued: they hold the memory
            del t
            hal.synchronize(cpu)  # waits without the GIL while workers hand memory back
            for result in results:
                np.testing.assert_array_equal(result.numpy(), np.full(64, index + round_))

    run_threads(work)
    gc.collect()
    hal.synchronize()
    assert [p.deleted for p in producers] == [1] * len(producers)


def test_threads_share_one_stream(cpu):
    stream = hal.Stream(cpu)
    base = hal.ones((8,), device=cpu, stream=stream)
    outputs = [None] * THREADS

    def work(index):
        for _ in range(ROUNDS):
            outputs[index] = hal.add(base, float(index), stream=stream)
            stream.synchronize()

    run_threads(work)
    for index, output in enumerate(outputs):
        np.testing.assert_array_equal(output.numpy(stream=stream), np.full(8, 1.0 + index))
