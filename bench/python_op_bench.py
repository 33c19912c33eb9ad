#!/usr/bin/python3
"""What a tiny op costs from Python: hal.add of two 16-float tensors on cpu:0 against torch.add
of the same in the same run (issue #21: hal's call at most twice PyTorch's).

Each figure is the median over repetitions of (time of CALLS calls, then one wait for their
results) / CALLS: the cost of a call as a loop of them pays it, hal's asynchronous enqueue and
its run on the stream's worker included. Runs alternate hal and PyTorch, so both see the same
machine. Prints a table, or with --json (or --output FILE) a hal.bench/1 document.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/python_op_bench.py [--json]
"""

import argparse
import statistics
import sys
import time

import numpy as np

import bench_document
import hal

GOAL = "ratio <= 2.0"


def per_call_ns(call, calls, finish):
    start = time.perf_counter_ns()
    for _ in range(calls):
        call()
    finish()
    return (time.perf_counter_ns() - start) / calls


def measure(pairs, calls, repeats):
    """Medians, per figure, of hal's and the baseline's per-call times, runs alternating."""
    samples = {name: ([], []) for name, *_ in pairs}
    for _ in range(repeats):
        for name, _, ours, theirs, finish in pairs:
            samples[name][0].append(per_call_ns(ours, calls, finish))
            samples[name][1].append(per_call_ns(theirs, calls, lambda: None))
    return {name: (statistics.median(a), statistics.median(b)) for name, (a, b) in samples.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print a hal.bench/1 document")
    parser.add_argument("--output", help="write the hal.bench/1 document to this file")
    parser.add_argument("--calls", type=int, default=20000, help="calls per timed run")
    parser.add_argument("--repeats", type=int, default=7, help="timed runs of each")
    args = parser.parse_args()
    if not 1 <= args.calls <= 10_000_000 or not 1 <= args.repeats <= 1000:
        parser.error("--calls is 1 to 10000000 and --repeats 1 to 1000")

    errors = []
    results = []
    try:
        import torch
    except ImportError as error:
        errors.append({"benchmark": "python_add_f32_16",
                       "message": f"PyTorch is not installed (Debian: python3-torch): {error}"})
        torch = None

    if torch is not None:
        torch.set_num_threads(1)  # 16 floats: PyTorch stays on the calling thread anyway
        cpu = hal.device("cpu:0")
        values = np.arange(16, dtype=np.float32)
        a, b = hal.tensor(values, device=cpu), hal.tensor(values, device=cpu)
        ta, tb = torch.from_numpy(values.copy()), torch.from_numpy(values.copy())
        sync = hal.current_stream(cpu).synchronize
        np.testing.assert_array_equal(hal.add(a, b).numpy(), torch.add(ta, tb).numpy())
        pairs = [  # name, baseline, hal's call, PyTorch's, what ends a timed run of hal's
            ("python_add_f32_16", "torch.add(a, b)", lambda: hal.add(a, b),
             lambda: torch.add(ta, tb), sync),
            ("python_operator_add_f32_16", "a + b (torch)", lambda: a + b, lambda: ta + tb, sync),
            # Waiting for each result: what a caller pays who reads every result at once.
            ("python_add_f32_16_each_waited", "torch.add(a, b)",
             lambda: (hal.add(a, b), sync()), lambda: torch.add(ta, tb), lambda: None),
        ]
        baselines = {name: baseline for name, baseline, *_ in pairs}
        measure(pairs, max(1, args.calls // 10), 1)  # warm up: caches, allocator, threads
        for name, (ours, theirs) in measure(pairs, args.calls, args.repeats).items():
            results.append({
                "name": name, "value": ours, "unit": "ns", "baseline": baselines[name],
                "baseline_value": theirs, "ratio": ours / theirs, "better": "lower",
                "goal": GOAL if name == "python_add_f32_16" else "",
            })

    document = {"schema": "hal.bench/1", "suite": "python_op", "device": "cpu:0",
                "results": results, "errors": errors}
    return bench_document.emit(
        document, args,
        f"{'figure':<32} {'hal':>10}    {'torch':>10}    {'ratio':>7}  goal",
        lambda r: f"{r['name']:<32} {r['value']:10.1f} ns {r['baseline_value']:10.1f} ns "
                  f"{r['ratio']:7.3f}  {r['goal']}")

if __name__ == "__main__":
    sys.exit(main())
