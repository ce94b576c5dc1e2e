"""Writes a small synthetic CIFAR-10 binary directory for the example tests:
data_batch_1.bin ... data_batch_5.bin of 16 records each and a test_batch.bin
of 16. A record is 1 label byte, then 3072 pixel bytes (R, G, B planes of
32x32); the label decides the picture's brightness, so there is something to
learn.

    python3 write_synthetic_cifar.py DIR
"""
import os
import random
import sys

out = sys.argv[1]
rng = random.Random(7)


def write(name, n):
    with open(os.path.join(out, name), "wb") as f:
        for _ in range(n):
            label = rng.randrange(10)
            base = label * 20
            f.write(bytes([label]) + bytes(min(255, base + rng.randrange(40)) for _ in range(3072)))


for i in range(1, 6):
    write("data_batch_%d.bin" % i, 16)
write("test_batch.bin", 16)
