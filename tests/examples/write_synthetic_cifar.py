"""Writes a synthetic CIFAR-10 binary directory, small for the example tests:
data_batch_1.bin ... data_batch_5.bin of RECORDS records each (default 16)
and a test_batch.bin of RECORDS. A record is 1 label byte, then 3072 pixel
bytes (R, G, B planes of 32x32); the label decides the picture's brightness,
so there is something to learn. The benchmarks ask for more records
(bench/loader_bench --cifar DIR, nn_throughput --cifar DIR).

    python3 write_synthetic_cifar.py DIR [RECORDS]
"""
import os
import random
import sys

out = sys.argv[1]
records = int(sys.argv[2]) if len(sys.argv) > 2 else 16
rng = random.Random(7)


def write(name, n):
    with open(os.path.join(out, name), "wb") as f:
        for _ in range(n):
            label = rng.randrange(10)
            base = label * 20
            f.write(bytes([label]) + bytes(min(255, base + rng.randrange(40)) for _ in range(3072)))


for i in range(1, 6):
    write("data_batch_%d.bin" % i, records)
write("test_batch.bin", records)
