#!/usr/bin/python3
"""Converts scikit-learn's handwritten digits to the .npy files `hal train` reads.

  export_digits.py [OUT_DIR]    (default: data/digits beside this script's folder)

sklearn.datasets.load_digits() ships inside scikit-learn (Debian: python3-sklearn): 1797 images of
8x8 pixels valued 0 to 16, with their digits. They are split once, with a fixed seed, into 1438
training and 359 test images (80/20, stratified by digit), and written as

  train_x.npy  uint8 [1438, 64]     test_x.npy  uint8 [359, 64]
  train_y.npy  int64 [1438]         test_y.npy  int64 [359]

so that neither the tests nor `hal train` need scikit-learn. Running it again writes the same
bytes.
"""
import os
import sys

import numpy as np


def main():
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        sys.exit("export_digits.py needs scikit-learn: apt-get install -y python3-sklearn")
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "data", "digits")
    os.makedirs(out, exist_ok=True)
    digits = load_digits()
    x = digits.data.astype(np.uint8)
    y = digits.target.astype(np.int64)
    # Stratified: a fifth of each digit's images, picked by a seeded permutation, for testing.
    random = np.random.RandomState(0)
    test = np.zeros(len(y), dtype=bool)
    for digit in range(10):
        where = np.flatnonzero(y == digit)
        picked = random.permutation(where)[: int(round(len(where) * 0.2))]
        test[picked] = True
    # Each split in a seeded shuffled order, so that no digit comes in a run.
    for name, mask in (("train", ~test), ("test", test)):
        order = random.permutation(np.flatnonzero(mask))
        np.save(os.path.join(out, name + "_x.npy"), x[order])
        np.save(os.path.join(out, name + "_y.npy"), y[order])
        print(f"{name}: {len(order)} images")


if __name__ == "__main__":
    main()
