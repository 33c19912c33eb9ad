#!/usr/bin/python3
"""The PyTorch peer of `hal bench train`: times an MLP's training step on the CPU.

  time_torch_train.py SIZES BATCH THREADS ROUNDS STEPS

SIZES is the layers' widths joined by commas ("64,128,10"): Linear layers with ReLU between
them. Each step is PyTorch eager's forward, cross-entropy loss, backward and AdamW step
(lr 1e-2, weight decay 1e-4, PyTorch's default implementation for CPU tensors) on a fixed batch,
with torch.set_num_threads(THREADS). After a warm-up, ROUNDS rounds of STEPS steps are timed;
prints one JSON line {"threads", "median_step_s", "min_step_s", "loss"}.
"""
import json
import sys
import time

import torch


def main():
    sizes = [int(s) for s in sys.argv[1].split(",")]
    batch, threads, rounds, steps = (int(a) for a in sys.argv[2:6])
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    layers = []
    for i in range(len(sizes) - 1):
        if i:
            layers.append(torch.nn.ReLU())
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
    model = torch.nn.Sequential(*layers)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=1e-4)
    x = torch.rand(batch, sizes[0])
    y = torch.randint(0, sizes[-1], (batch,))

    def step():
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    for _ in range(20):
        step()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(steps):
            loss = step()
        times.append((time.perf_counter() - start) / steps)
    times.sort()
    print(json.dumps({"threads": threads, "median_step_s": times[len(times) // 2],
                      "min_step_s": times[0], "loss": float(loss)}))


if __name__ == "__main__":
    main()
