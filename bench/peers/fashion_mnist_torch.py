"""What the PyTorch peers on Fashion-MNIST share: Debian's IDX files read
and normalised as disttrain's loader does, and disttrain's "lenet" (the
layers of src/nn/model_builders.cc) in PyTorch."""
import gzip
import os
import struct

import numpy as np
import torch
import torch.nn as nn

MEAN, STD = 0.2860, 0.3530  # disttrain's loader defaults


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load(data_dir, split):
    """split "train" or "test": (images N x 1 x 28 x 28 float32, labels int64)."""
    prefix = "train" if split == "train" else "t10k"
    images = read_idx(os.path.join(data_dir, prefix + "-images-idx3-ubyte.gz")).astype(np.float32)
    labels = read_idx(os.path.join(data_dir, prefix + "-labels-idx1-ubyte.gz")).astype(np.int64)
    images = (images / 255.0 - MEAN) / STD
    return torch.from_numpy(images).unsqueeze(1), torch.from_numpy(labels)


def lenet():
    return nn.Sequential(
        nn.Conv2d(1, 20, 5), nn.ReLU(), nn.MaxPool2d(2, 2),
        nn.Conv2d(20, 50, 5), nn.ReLU(), nn.MaxPool2d(2, 2),
        nn.Flatten(), nn.Linear(800, 500), nn.ReLU(), nn.Linear(500, 10))
