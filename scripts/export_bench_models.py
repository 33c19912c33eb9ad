#!/usr/bin/python3
"""The models `hal bench models` runs against PyTorch, with random weights (fixed seeds).

For each of mlp, transformer and cnn it writes, into OUTDIR:
  NAME.onnx        torch.onnx.export, opset 17 (what hal runs)
  NAME.pt          torch.jit.trace of the same module (what the PyTorch peer runs)
  NAME.input.npy   the input both are timed on

  mlp          784 -> 1024 -> 1024 -> 10 with ReLU, batch 64
  transformer  nn.TransformerEncoder: 4 layers, d_model 256, 4 heads, feed-forward 1024,
               sequence 128, batch 1
  cnn          ResNet-18's shape (BasicBlocks [2, 2, 2, 2], 64..512 channels, batch norm), one
               224 x 224 RGB image, 1000 classes

Needs Debian's python3-torch, python3-onnx and python3-numpy (scripts/setup-bench-models.sh
installs them); `make test` does not.
"""
import os
import sys

import numpy as np
import torch
from torch import nn


def mlp():
    model = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                          nn.Linear(1024, 10))
    return model, torch.randn(64, 784)


def transformer():
    layer = nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024, dropout=0.0,
                                       batch_first=True)
    return nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False), \
        torch.randn(1, 128, 256)


class BasicBlock(nn.Module):
    def __init__(self, inputs, outputs, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(inputs, outputs, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(outputs)
        self.conv2 = nn.Conv2d(outputs, outputs, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(outputs)
        self.down = None
        if stride != 1 or inputs != outputs:
            self.down = nn.Sequential(nn.Conv2d(inputs, outputs, 1, stride, bias=False),
                                      nn.BatchNorm2d(outputs))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (x if self.down is None else self.down(x)))


class ResNet18(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        blocks, channels = [], 64
        for outputs, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
            blocks += [BasicBlock(channels, outputs, stride), BasicBlock(outputs, outputs, 1)]
            channels = outputs
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(512, classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def cnn():
    return ResNet18(), torch.randn(1, 3, 224, 224)


def export(name, build, out_dir):
    torch.manual_seed(20261123)
    model, example = build()
    model.eval()
    # Exported with autograd on: under no_grad PyTorch swaps the encoder layer for a fused
    # kernel ONNX has no op for. The peer's trace takes that fast path: PyTorch at its best.
    torch.onnx.export(model, (example,), os.path.join(out_dir, name + ".onnx"),
                      input_names=["input"], output_names=["output"], opset_version=17)
    with torch.no_grad():
        torch.jit.trace(model, (example,)).save(os.path.join(out_dir, name + ".pt"))
    np.save(os.path.join(out_dir, name + ".input.npy"), example.numpy())


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "bench-models"
    os.makedirs(out_dir, exist_ok=True)
    for name, build in [("mlp", mlp), ("transformer", transformer), ("cnn", cnn)]:
        export(name, build, out_dir)
        print("wrote", os.path.join(out_dir, name + ".onnx"))


if __name__ == "__main__":
    main()
