#!/usr/bin/env python3
"""Writes the first N samples of a Fashion-MNIST (IDX, .gz or plain) set as
plain IDX files, so a test job trains a few batches on real data.

  write_idx_subset.py SRC_DIR DST_DIR TRAIN_N TEST_N
"""
import gzip
import os
import struct
import sys


def read(path):
    for candidate in (path, path + ".gz"):
        if os.path.exists(candidate):
            opener = gzip.open if candidate.endswith(".gz") else open
            with opener(candidate, "rb") as f:
                return f.read()
    sys.exit(f"neither {path} nor {path}.gz exists")


def subset(data, n):
    dims = data[3]
    shape = list(struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims]))
    if n > shape[0]:
        sys.exit(f"asked for {n} samples of {shape[0]}")
    per_sample = 1
    for d in shape[1:]:
        per_sample *= d
    shape[0] = n
    header = data[:4] + struct.pack(">" + "I" * dims, *shape)
    start = 4 + 4 * dims
    return header + data[start:start + n * per_sample]


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    src, dst, train_n, test_n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    os.makedirs(dst, exist_ok=True)
    for prefix, n in (("train", train_n), ("t10k", test_n)):
        for kind in ("images-idx3-ubyte", "labels-idx1-ubyte"):
            name = f"{prefix}-{kind}"
            with open(os.path.join(dst, name), "wb") as f:
                f.write(subset(read(os.path.join(src, name)), n))


if __name__ == "__main__":
    main()
