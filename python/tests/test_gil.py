"""hal lets go of the GIL while it waits, so that other Python threads run meanwhile, hal's own
workers among them when they hand DLPack memory back (which takes the GIL).

The probe is deterministic, not a timing: with a switch interval longer than the test, threads
change hands only when one blocks. A thread calls a hal wait on work whose end needs the GIL (a
foreign tensor's deleter, held back until the main thread says so); the main thread, blocked in
Thread.start(), runs again only if that wait let go of the GIL. Each probe runs in a Python of
its own: a wait that kept the GIL would deadlock it, and the timeout says so."""

import os
import subprocess
import sys
import textwrap

import pytest

PROBE = textwrap.dedent(
    """
    import sys, threading
    import numpy as np
    import hal
    from dlpack_capsules import Producer

    cpu = hal.device("cpu:0")
    main = threading.get_ident()

    def probe(wait, stream):
        for attempt in range(20):
            go, state = threading.Event(), {"entered": False, "returned": False}

            def hand_back():  # the producer's deleter: on hal's worker, held until `go`
                if threading.get_ident() != main:
                    go.wait(60)

            producer = Producer(np.ones(1 << 12, dtype=np.float32), on_delete=hand_back)
            slow = hal.uniform((256, 256), seed=1, device=cpu, stream=stream)
            for _ in range(6):
                slow = hal.matmul(slow, slow, stream=stream)  # so that the next op runs later
            t = hal.from_dlpack(producer.capsule())
            y = hal.add(t, 1.0, stream=stream)  # its task holds t's memory last
            del t, y
            if producer.deleted:  # handed back on this thread already: not a probe
                continue

            def waiter():
                state["entered"] = True
                wait()
                state["returned"] = True

            sys.setswitchinterval(1000.0)
            thread = threading.Thread(target=waiter)
            thread.start()  # back here only once the waiter, or hal's worker, lets go of the GIL
            ran_meanwhile = state["entered"] and not state["returned"]
            sys.setswitchinterval(0.005)
            go.set()
            thread.join(60)
            stream.synchronize()
            assert producer.deleted == 1 and state["returned"]
            return ran_meanwhile
        return "hal finished before the probe could hold it back"

    own = hal.Stream(cpu)
    print("Stream.synchronize", probe(own.synchronize, own))
    current = hal.current_stream(cpu)
    print("hal.synchronize", probe(lambda: hal.synchronize(cpu), current))
    print("Event.synchronize", probe(lambda: current.record().synchronize(), current))
    print("Tensor.numpy", probe(lambda: hal.zeros((4,), device=cpu).numpy(), current))
    print("a pure Python call", probe(lambda: sum(range(10 ** 5)), current))
    """
)


def test_waits_let_go_of_the_gil():
    tests = os.path.dirname(__file__)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.environ.get("PYTHONPATH", ""), tests]))
    try:
        result = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                                text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("deadlock: a hal wait kept the GIL that hal's worker needed")
    assert result.returncode == 0, result.stderr
    lines = dict(line.rsplit(" ", 1) for line in result.stdout.splitlines())
    for call in ("Stream.synchronize", "hal.synchronize", "Event.synchronize", "Tensor.numpy"):
        assert lines[call] == "True", (call, result.stdout)
    # The probe can tell: a call that keeps the GIL shows as one.
    assert lines["a pure Python call"] == "False", result.stdout


# The first device lookup of a process discovers every backend's devices (and the default device
# ranks them): hundreds of milliseconds, with the GIL let go. The same probe: a thread makes the
# lookup, and the main thread, blocked in Thread.start() with a switch interval longer than the
# test, runs again before the call returns only if the call let go of the GIL.
DISCOVERY_PROBE = textwrap.dedent(
    """
    import sys, threading, time
    import hal

    state = {"entered": False, "returned": False}

    def waiter():
        state["entered"] = True
        start = time.perf_counter()
        CALL
        state["took"] = time.perf_counter() - start
        state["returned"] = True

    sys.setswitchinterval(1000.0)
    thread = threading.Thread(target=waiter)
    thread.start()
    ran_meanwhile = state["entered"] and not state["returned"]
    sys.setswitchinterval(0.005)
    thread.join(60)
    print(ran_meanwhile, state["took"])
    """
)


@pytest.mark.parametrize("call", ["hal.Event()", "hal.device_scope('cpu:0')",
                                  "hal.current_stream(None)"])
def test_device_discovery_lets_go_of_the_gil(call):
    # Each a device=None or an id, through the module's own lookup (hal.default_device() and
    # hal.device() themselves let go of it already).
    result = subprocess.run([sys.executable, "-c", DISCOVERY_PROBE.replace("CALL", call)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    ran_meanwhile, took = result.stdout.split()
    if ran_meanwhile != "True" and float(took) < 0.05:
        pytest.skip(f"discovery took {float(took) * 1000:.1f} ms: too quick to tell")
    assert ran_meanwhile == "True", f"{call} kept the GIL for {float(took) * 1000:.0f} ms"
