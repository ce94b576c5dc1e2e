#!/usr/bin/env python3
"""Reads a safetensors file written by disttrain with nothing but the format's
definition (struct + json), so that a layout mistake in our writer cannot be
hidden by our own reader.

usage: check_safetensors.py HELLO_NDARRAY_BINARY OUTPUT_FILE
Runs the hello_ndarray example (which saves x and y) and checks the file."""
import json
import struct
import subprocess
import sys


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def main():
    binary, path = sys.argv[1], sys.argv[2]
    subprocess.run([binary, path], check=True, timeout=60, stdout=subprocess.DEVNULL)
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        fail("file shorter than the 8-byte header length")
    (header_len,) = struct.unpack("<Q", blob[:8])
    if 8 + header_len > len(blob):
        fail(f"header length {header_len} runs past the file ({len(blob)} bytes)")
    header_text = blob[8:8 + header_len].decode("utf-8")
    if (8 + header_len) % 8 != 0:
        fail("data block does not start 8-byte aligned")
    header = json.loads(header_text)
    data = blob[8 + header_len:]

    expected_x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    expected = {"x": expected_x, "y": [0.25 + 2 * v for v in expected_x]}
    if set(k for k in header if k != "__metadata__") != set(expected):
        fail(f"tensors {sorted(header)} instead of {sorted(expected)}")
    spans = []
    for name, values in expected.items():
        entry = header[name]
        if set(entry) != {"dtype", "shape", "data_offsets"}:
            fail(f"{name}: keys {sorted(entry)}")
        if entry["dtype"] != "F32" or entry["shape"] != [2, 3]:
            fail(f"{name}: dtype {entry['dtype']} shape {entry['shape']}")
        begin, end = entry["data_offsets"]
        if end - begin != 6 * 4:
            fail(f"{name}: data_offsets {begin},{end} do not span 24 bytes")
        got = list(struct.unpack("<6f", data[begin:end]))
        if got != values:
            fail(f"{name}: values {got} != {values}")
        spans.append((begin, end))
    spans.sort()
    if spans[0][0] != 0 or spans[0][1] != spans[1][0] or spans[1][1] != len(data):
        fail(f"data blocks {spans} do not tile the {len(data)} data bytes")
    print("safetensors layout OK:", header_text.strip())


if __name__ == "__main__":
    main()
