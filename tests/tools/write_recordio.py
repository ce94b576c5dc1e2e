#!/usr/bin/python3
"""Writes small MXNet RecordIO image sets by the format's documented layout,
for the RecordIO tests: dmlc-core's framing (uint32 magic 0xced7230a, uint32
lrecord = cflag << 29 | length, the payload padded to 4 bytes, a payload that
holds the magic at a 4-byte-aligned position cut into start/middle/end parts
around it) and MXNet's image record (IRHeader: uint32 flag, float32 label,
uint64 id, uint64 id2; flag > 0: flag float32 labels follow; then the
encoded image), with the .idx that im2rec writes ("key\\toffset" lines).

    write_recordio.py OUT_DIR [SIDE]

writes OUT_DIR/small.rec and OUT_DIR/small.idx: 8 records of SIDE x SIDE
(default 8) images, record i has class i % 4 and every pixel equal to
(40 * i, 255 - 20 * i, 7 * i), so a reader can check labels and pixels;
record 0..3 are PNG, 4..7 JPEG (quality 100, no chroma subsampling), record
5 carries a label vector [1, 9.5, -2] (its class is the first, 1), and
record 6's image is followed by a comment that holds the magic bytes at an
aligned offset, so that it is split into parts. Prints one line per record
("record I: offset O, parts P, class C, FORMAT"). Needs python3 and Pillow.
"""
import io
import os
import struct
import sys

from PIL import Image

MAGIC = 0xCED7230A
MAGIC_BYTES = struct.pack("<I", MAGIC)
IR_FORMAT = "<IfQQ"  # flag, label, id, id2: 24 bytes


def frame(payload):
    """The RecordIO parts of one record (dmlc-core's RecordIOWriter)."""
    out = b""
    parts = 0
    start = 0
    for i in range(0, len(payload) // 4 * 4, 4):
        if payload[i:i + 4] == MAGIC_BYTES:
            cflag = 1 if start == 0 else 2
            out += MAGIC_BYTES + struct.pack("<I", cflag << 29 | (i - start)) + payload[start:i]
            parts += 1
            start = i + 4
    cflag = 3 if start != 0 else 0
    tail = payload[start:]
    out += MAGIC_BYTES + struct.pack("<I", cflag << 29 | len(tail)) + tail
    out += b"\0" * (-len(tail) % 4)
    return out, parts + 1


def image_record(labels, ident, image_bytes):
    """MXNet's pack(): a scalar label in the header, or a label vector after it."""
    if len(labels) == 1:
        header = struct.pack(IR_FORMAT, 0, labels[0], ident, 0)
    else:
        header = struct.pack(IR_FORMAT, len(labels), 0.0, ident, 0) + struct.pack("<%df" % len(labels), *labels)
    return header + image_bytes


def encode(side, i, fmt):
    colour = (40 * i % 256, (255 - 20 * i) % 256, 7 * i % 256)
    buffer = io.BytesIO()
    image = Image.new("RGB", (side, side), colour)
    if fmt == "PNG":
        image.save(buffer, "PNG")
    else:
        image.save(buffer, "JPEG", quality=100, subsampling=0)
    return buffer.getvalue()


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    side = int(sys.argv[2]) if len(sys.argv) == 3 else 8
    os.makedirs(out_dir, exist_ok=True)
    rec = b""
    idx = ""
    for i in range(8):
        fmt = "PNG" if i < 4 else "JPEG"
        image = encode(side, i, fmt)
        labels = [1.0, 9.5, -2.0] if i == 5 else [float(i % 4)]
        payload = image_record(labels, i, image)
        if i == 6:
            # Bytes after a JPEG's end marker are ignored by decoders; these
            # put the magic at an aligned offset of the payload.
            payload += b"\0" * (-len(payload) % 4) + MAGIC_BYTES + b"tail"
        framed, parts = frame(payload)
        if i == 6 and parts < 2:
            sys.exit("write_recordio.py: record 6 was meant to be split")
        idx += "%d\t%d\n" % (i, len(rec))
        print("record %d: offset %d, parts %d, class %d, %s" % (i, len(rec), parts, int(labels[0]), fmt))
        rec += framed
    with open(os.path.join(out_dir, "small.rec"), "wb") as f:
        f.write(rec)
    with open(os.path.join(out_dir, "small.idx"), "w") as f:
        f.write(idx)


if __name__ == "__main__":
    main()
