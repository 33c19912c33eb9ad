#!/usr/bin/python3
"""Exports the model `hal demo` runs: a small transformer encoder (2 layers, d_model 64, 4 heads,
GELU, sequence 16) with a linear head, random weights from a fixed seed, through
torch.onnx.export (opset 17), with one input and PyTorch's output for it as .npy files.

Needs Debian's python3-torch and python3-onnx (not installed by `make test`: the files it makes
are kept in models/). Run from anywhere:  /usr/bin/python3 scripts/export_demo_model.py
"""
import pathlib

import numpy as np
import torch

OUT = pathlib.Path(__file__).resolve().parent.parent / "models"
NAME = "transformer_encoder"


class Encoder(torch.nn.Module):
    def __init__(self, d_model=64, heads=4, layers=2, classes=10):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(
            d_model, heads, dim_feedforward=2 * d_model, dropout=0.0, activation="gelu",
            batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = torch.nn.Linear(d_model, classes)

    def forward(self, x):
        return torch.softmax(self.head(self.encoder(x)), dim=-1)


def main():
    torch.manual_seed(2026)
    model = Encoder().eval()
    x = torch.randn(2, 16, 64)
    with torch.no_grad():
        y = model(x)
    OUT.mkdir(exist_ok=True)
    torch.onnx.export(model, (x,), OUT / f"{NAME}.onnx", opset_version=17,
                      input_names=["tokens"], output_names=["probabilities"],
                      dynamic_axes={"tokens": {0: "batch"}, "probabilities": {0: "batch"}})
    np.save(OUT / f"{NAME}.input.npy", x.numpy())
    np.save(OUT / f"{NAME}.expected.npy", y.numpy())
    print(f"wrote {OUT / NAME}.onnx, .input.npy, .expected.npy")


if __name__ == "__main__":
    main()
