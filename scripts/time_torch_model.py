#!/usr/bin/python3
"""The PyTorch peer of `hal bench models`: times a traced model on the CPU.

  time_torch_model.py MODEL.pt INPUT.npy THREADS REPEAT OUTPUT.npy

prints one JSON line {"threads", "repeat", "median_s", "min_s"}: the forward pass under
torch.no_grad() with torch.set_num_threads(THREADS), after two warm-up passes; writes the
output to OUTPUT.npy, for the benchmark to check hal's against.
"""
import json
import sys
import time

import numpy as np
import torch


def main():
    model_path, input_path, output_path = sys.argv[1], sys.argv[2], sys.argv[5]
    threads, repeat = int(sys.argv[3]), int(sys.argv[4])
    torch.set_num_threads(threads)
    model = torch.jit.load(model_path).eval()
    example = torch.from_numpy(np.load(input_path))
    times = []
    with torch.no_grad():
        for _ in range(2):
            output = model(example)
        for _ in range(repeat):
            start = time.perf_counter()
            model(example)
            times.append(time.perf_counter() - start)
    np.save(output_path, output.numpy())
    times.sort()
    print(json.dumps({"threads": threads, "repeat": repeat, "median_s": times[len(times) // 2],
                      "min_s": times[0]}))


if __name__ == "__main__":
    main()
