#!/usr/bin/env python3
"""Writes the fuzzers' seed corpora: a few small valid inputs per target,
fuzz/corpus/<target>/<name>. Run from anywhere; it rewrites the folders it
owns, byte for byte the same each time. Needs flatc (the parameter-server
frames, from src/ps/transport/protocol.fbs) and a C compiler with libjpeg
(the JPEG seeds): both are build dependencies already.

    python3 fuzz/corpus/generate.py
"""
import base64
import gzip
import json
import os
import shutil
import struct
import subprocess
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCHEMA = os.path.join(ROOT, "src", "ps", "transport", "protocol.fbs")
FRAME_H = os.path.join(ROOT, "src", "ps", "transport", "frame.h")


def protocol_version():
    # kProtocolVersion, read from frame.h: seeds of another version stop at
    # Frame::parse's version check and reach nothing behind it.
    with open(FRAME_H) as f:
        for line in f:
            if line.startswith("constexpr uint32_t kProtocolVersion = "):
                return int(line.split("=")[1].strip().rstrip(";"))
    raise SystemExit("generate.py: no kProtocolVersion in " + FRAME_H)


PROTOCOL_VERSION = protocol_version()


def write(target, name, data):
    folder = os.path.join(HERE, target)
    os.makedirs(folder, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


# --- ps_frame: FlatBuffers envelopes framed as frame.h describes ------------
def frame(envelope_bytes, payload=b""):
    head = struct.pack("<I", len(envelope_bytes)) + envelope_bytes
    if not payload:
        return head
    padded = (len(head) + 15) // 16 * 16
    return head + b"\0" * (padded - len(head)) + payload


def flatc_envelope(tmp, name, body_type, body):
    source = os.path.join(tmp, name + ".json")
    with open(source, "w") as f:
        json.dump({"protocol_version": PROTOCOL_VERSION, "body_type": body_type, "body": body}, f)
    subprocess.run(["flatc", "-b", "-o", tmp, SCHEMA, source], check=True)
    with open(os.path.join(tmp, name + ".bin"), "rb") as f:
        return f.read()


def ps_frames(tmp):
    floats = struct.pack("<4f", 1.0, -2.0, 0.5, 3.25)
    slice_ = {"key": 7, "part_begin": 0, "part_end": 4, "dtype": 0, "shape": [2, 2], "round": 3,
              "data_offset": 0, "data_bytes": 16}
    messages = {
        "register": ("Register", {"role": "Server", "host": "host-a", "pid": 99,
                                  "data_urls": ["tcp://10.0.0.1:9000"], "num_servers": 1, "num_workers": 2}, b""),
        "node_table": ("NodeTable", {"num_servers": 1, "num_workers": 1, "your_rank": 0, "scheduler_pid": 5,
                                     "servers": [{"role": "Server", "rank": 0, "host": "h", "pid": 1,
                                                  "data_urls": ["tcp://h:1"]}],
                                     "workers": [{"role": "Worker", "rank": 0, "host": "h", "pid": 2}]}, b""),
        "heartbeat_reply": ("HeartbeatReply", {"lost": [{"role": "Worker", "rank": 1, "host": "x", "pid": 3,
                                                          "reason": "gone"}], "shutdown": False}, b""),
        # a worker's heartbeat with its numbers for dtrun's summary
        "heartbeat_worker_status": ("Heartbeat", {"role": "Worker", "rank": 1, "worker_status": {
            "steps": 12, "images": 768, "bytes_sent": 4096, "bytes_received": 4096, "compute_s": 1.25,
            "exchange_s": 0.5, "wall_s": 2.0}}, b""),
        "heartbeat_server_status": ("Heartbeat", {"role": "Server", "rank": 0, "server_status": {
            "requests": 480, "bytes_sent": 8192, "bytes_received": 8192, "compute_s": 0.12,
            "communicate_s": 0.41, "waiting_s": 1.47, "wall_s": 2.0}}, b""),
        "barrier": ("Barrier", {"rank": 1, "barrier_id": 4, "data": [1, 2, 3]}, b""),
        "regroup": ("Regroup", {"rank": 1, "generation": 1, "data": [1, 0, 0, 0, 0, 0, 0, 0, 0]}, b""),
        "admission": ("Admission", {"rank": 1, "generation": 1, "data": [1, 0, 0, 0, 0, 0, 0, 0, 0]}, b""),
        "ack_gathered": ("Ack", {"gathered": [{"rank": 0, "data": [9, 8]}, {"rank": 1, "data": []}]}, b""),
        "ack_admission": ("Ack", {"gathered": [{"rank": 0, "data": [0, 5, 0, 0, 0, 0, 0, 0, 0]},
                                               {"rank": 1, "data": [1, 0, 0, 0, 0, 0, 0, 0, 0]}],
                                  "regroup_generation": 2, "departed_workers": 1, "next_barrier": 3}, b""),
        "error_reply": ("ErrorReply", {"status": 9, "message": "slow"}, b""),
        "push": ("DataRequest", {"op": "Push", "worker_rank": 0, "slices": [slice_]}, floats),
        # worker 0's push to a new copy, with its round's optimizer numbers
        "push_new_copy_numbers": ("DataRequest", {"op": "Push", "worker_rank": 0, "slices": [
            dict(slice_, adopt_from=1, learning_rate=0.05, rescale_grad=0.015625)]}, floats),
        "pull": ("DataRequest", {"op": "Pull", "worker_rank": 1,
                                 "slices": [dict(slice_, data_bytes=0, data_offset=0)]}, b""),
        # 1bit (encoding 4) of 4 values: one 32-bit word
        "push_1bit": ("DataRequest", {"op": "PushPull", "worker_rank": 0,
                                      "slices": [dict(slice_, encoding=4, data_bytes=4)]}, b"\xa0\0\0\0"),
        "set_optimizer": ("DataRequest", {"op": "SetOptimizer", "worker_rank": 0,
                                          "text": '{"optimizer":"sgd","learning_rate":0.1}'}, b""),
        "join_question": ("Join", {"worker_rank": 1, "question": True}, b""),
        "join": ("Join", {"worker_rank": 1, "round": 3, "pid": 4242}, b""),
        "server_settings": ("ServerSettings", {"server_rank": 1}, b""),
        "server_settings_reply": ("ServerSettingsReply", {
            "mode": "DistSync", "optimizer": '{"optimizer":"sgd","learning_rate":0.1}', "learning_rate": 0.1,
            "rescale_grad": 0.5, "compression": "2bit:threshold=0.5", "joined": [{"rank": 1, "pid": 4242}]}, b""),
        "get_optimizer_state": ("GetOptimizerState", {"worker_rank": 0}, b""),
        # one momentum array of 4 floats, named as the server names it
        "optimizer_state": ("OptimizerState", {"worker_rank": 0, "names": ["7/0/4.mom"], "arrays": [
            dict(slice_, key=0, shape=[4], round=-1)]}, floats),
        "part_state": ("PartState", {"server_rank": 1, "part": dict(slice_, data_bytes=0)}, b""),
        # the part's value and its momentum (4 floats each), the source's numbers
        "part_state_reply": ("PartStateReply", {
            "round": 3, "value": slice_, "optimizer_names": ["7/0/4.mom"],
            "optimizer_arrays": [dict(slice_, key=0, shape=[4], round=-1, data_offset=16)],
            "learning_rate": 0.05, "rescale_grad": 0.5}, floats + floats),
        "data_reply": ("DataReply", {"status": 0, "message": "m", "slices": [slice_]}, floats),
        # a compressed pull's answer: fp16 (encoding 1) of 4 values
        "data_reply_fp16": ("DataReply", {"status": 0, "slices": [dict(slice_, encoding=1, data_bytes=8)]},
                            struct.pack("<4e", 1.0, -2.0, 0.5, 3.25)),
    }
    for name, (body_type, body, payload) in messages.items():
        write("ps_frame", name, frame(flatc_envelope(tmp, name, body_type, body), payload))
    # Found by ps_frame_fuzzer: a push whose shape vector ([long]) sits 4 bytes
    # off its 8-byte alignment, which the Verifier does not check. (Byte 32,
    # the envelope's protocol_version, follows PROTOCOL_VERSION.)
    misaligned = bytearray(base64.b64decode(
        "oAAAABQAAABEVFBTAAAKABIACAAHAAwACgAAAAAAAAkDAAAAEAAAAAAACgAMAAcAAAAIAAoAAAAAAAADBAAAAAEAAAAcAAAA"
        "AAAWADAADAAAABQAAAAIABwAAAAkAAcAFgAAAAAAAAMEAAAAAQAAABwAAAAAABYAMAAMAAAAFAAAAAgAHAAAACQABwAWAAAA"
        "AAAAAAIAAAAAAAAAAgAAAAAAAAAAAAAAAAAAAAAAAACgAAAA"))
    misaligned[32] = PROTOCOL_VERSION
    write("ps_frame", "regression_misaligned_shape", bytes(misaligned))


# --- gradient_codec: mode, parameter, n (low 13 bits of a uint16 LE), bytes --
def gradient_codec():
    def seed(name, mode, parameter, n, data):
        write("gradient_codec", name, bytes([mode, parameter]) + struct.pack("<H", n) + data)

    seed("none", 0, 0, 4, struct.pack("<4f", 1, -1, 0.25, 0))
    seed("fp16", 1, 0, 4, struct.pack("<4e", 1, -1, 0.25, 0))
    seed("bf16", 2, 0, 2, b"\x80\x3f\x80\xbf")  # 1.0, -1.0
    # 2bit, threshold 0.5, magnitude=mean: m = 0.75, then values +m, -m, 0,
    # +m and zeros; and MXNet's form (parameter bit 2): +t, -t, 0, +t
    seed("2bit", 3, 0, 16, struct.pack("<f", 0.75) + bytes([0b11100011, 0, 0, 0]))
    seed("2bit_threshold_magnitude", 3, 4, 16, bytes([0b11100011, 0, 0, 0]))
    seed("1bit", 4, 0, 32, bytes([0b10110000, 0xff, 0, 1]))
    # topk, fraction 0.5 of 4: two (index, value) pairs, ascending
    seed("topk", 5, 2, 4, struct.pack("<IfIf", 1, 2.0, 3, -3.0))
    # threshold 0.5: every |g| >= 0.5
    seed("threshold", 6, 0, 8, struct.pack("<IfIfIf", 0, 0.5, 2, -0.75, 7, 4.0))


# --- ps_request_text: optimizer JSON and compression configs ----------------
def ps_request_text():
    write("ps_request_text", "sgd", '{"optimizer":"sgd","learning_rate":0.1,"momentum":0.9,"wd":0.0001}')
    write("ps_request_text", "adam_cosine",
          '{"optimizer":"adam","learning_rate":0.001,"beta1":0.9,"lr_scheduler":"cosine","max_update":1000}')
    write("ps_request_text", "sgd_multifactor",
          '{"optimizer":"nag","lr_scheduler":"multifactor","steps":[10,20],"factor":0.5}')
    write("ps_request_text", "compression_2bit", "2bit:threshold=0.5")
    write("ps_request_text", "compression_topk", "topk:fraction=0.01,error_feedback=off")
    write("ps_request_text", "compression_fp16", "fp16")


# --- safetensors -------------------------------------------------------------
def safetensors(arrays, metadata=None):
    header, data = {}, b""
    for name, dtype, shape, raw in arrays:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def safetensors_seeds():
    write("safetensors", "f32_2x3", safetensors([("w", "F32", [2, 3], struct.pack("<6f", *range(6)))],
                                                {"format": "pt"}))
    write("safetensors", "mixed", safetensors([
        ("a.weight", "F16", [2], struct.pack("<2e", 1.5, -2)),
        ("b", "I32", [3], struct.pack("<3i", 1, -2, 3)),
        ("c", "U8", [2, 2], bytes([1, 2, 3, 4])),
        ("d", "F64", [1], struct.pack("<d", 0.1)),
        ("e", "I64", [], struct.pack("<q", 5)),
    ]))
    write("safetensors", "empty_tensor", safetensors([("z", "F32", [0, 4], b"")]))


# --- idx (MNIST) --------------------------------------------------------------
def idx(type_byte, dims, element_format, values):
    head = bytes([0, 0, type_byte, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims)
    return head + b"".join(struct.pack(">" + element_format, v) for v in values)


def idx_seeds():
    write("idx", "u8_images", idx(0x08, [2, 2, 3], "B", range(12)))
    write("idx", "u8_labels_gz", gzip.compress(idx(0x08, [4], "B", [1, 7, 0, 9]), mtime=0))
    write("idx", "i8", idx(0x09, [3], "b", [-1, 0, 1]))
    write("idx", "i16", idx(0x0B, [2], "h", [-300, 300]))
    write("idx", "i32", idx(0x0C, [1, 2], "i", [-70000, 70000]))
    write("idx", "f32", idx(0x0D, [2], "f", [0.5, -1]))
    write("idx", "f64", idx(0x0E, [1], "d", [0.1]))


# --- cifar ----------------------------------------------------------------------
def cifar_seeds():
    pixels = bytes((i * 7) % 256 for i in range(3072))
    write("cifar", "cifar10_record", bytes([3]) + pixels)
    write("cifar", "cifar100_record", bytes([4, 42]) + pixels)


# --- recordio: dmlc-core framing around MXNet image records -------------------
RECORDIO_MAGIC = struct.pack("<I", 0xCED7230A)


def recordio_frame(payload):
    # dmlc-core's writer: cut at each aligned magic, which is dropped.
    out, start = b"", 0
    for i in range(0, len(payload) // 4 * 4, 4):
        if payload[i:i + 4] == RECORDIO_MAGIC:
            out += RECORDIO_MAGIC + struct.pack("<I", (1 if start == 0 else 2) << 29 | (i - start)) + payload[start:i]
            start = i + 4
    tail = payload[start:]
    out += RECORDIO_MAGIC + struct.pack("<I", (3 if start else 0) << 29 | len(tail)) + tail
    return out + b"\0" * (-len(tail) % 4)


def image_record(labels, image):
    if len(labels) == 1:
        return struct.pack("<IfQQ", 0, labels[0], 0, 0) + image
    return struct.pack("<IfQQ", len(labels), 0, 0, 0) + struct.pack("<%df" % len(labels), *labels) + image


def recordio_seeds():
    grey = png(4, 4, 0, 8, [bytes(range(y * 4, y * 4 + 4)) for y in range(4)])
    rgb = png(2, 2, 2, 8, [bytes([255, 0, 0, 0, 255, 0]), bytes([0, 0, 255, 9, 9, 9])])
    padded = image_record([2.0], rgb)
    padded += b"\0" * (-len(padded) % 4)
    write("recordio", "one_png", recordio_frame(image_record([1.0], grey)))
    write("recordio", "label_vector", recordio_frame(image_record([3.0, 0.5], rgb)))
    write("recordio", "split", recordio_frame(padded + RECORDIO_MAGIC + b"tail"))
    write("recordio", "two_records", recordio_frame(image_record([0.0], rgb)) + recordio_frame(image_record([4.0], grey)))


# --- images: PNG written here, JPEG by libjpeg -------------------------------
def png(width, height, colour_type, bit_depth, rows, palette=None):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\0" + row for row in rows)
    out = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, bit_depth, colour_type, 0, 0, 0))
    if palette:
        out += chunk(b"PLTE", palette)
    return out + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


JPEG_WRITER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <jpeglib.h>
/* argv: path width height components(1|3) progressive(0|1) */
int main(int argc, char** argv) {
  (void)argc;
  FILE* f = fopen(argv[1], "wb");
  struct jpeg_compress_struct c;
  struct jpeg_error_mgr e;
  c.err = jpeg_std_error(&e);
  jpeg_create_compress(&c);
  jpeg_stdio_dest(&c, f);
  c.image_width = atoi(argv[2]);
  c.image_height = atoi(argv[3]);
  c.input_components = atoi(argv[4]);
  c.in_color_space = c.input_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 75, TRUE);
  if (atoi(argv[5])) jpeg_simple_progression(&c);
  jpeg_start_compress(&c, TRUE);
  JSAMPLE row[64 * 3];
  while (c.next_scanline < c.image_height) {
    for (unsigned i = 0; i < c.image_width * c.input_components; ++i) row[i] = (JSAMPLE)(i * 13 + c.next_scanline * 29);
    JSAMPROW rows[1] = {row};
    jpeg_write_scanlines(&c, rows, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  fclose(f);
  return 0;
}
"""


def image_seeds(tmp):
    rgb_rows = [bytes((x * 40 + y * 70 + c * 90) % 256 for x in range(5) for c in range(3)) for y in range(3)]
    write("image_decode", "rgb_5x3.png", png(5, 3, 2, 8, rgb_rows))
    write("image_decode", "grey_4x4.png", png(4, 4, 0, 8, [bytes(range(y * 4, y * 4 + 4)) for y in range(4)]))
    rgba16_rows = [b"".join(struct.pack(">4H", x * 9000, y * 20000, 1234, 65535) for x in range(3)) for y in range(2)]
    write("image_decode", "rgba16_3x2.png", png(3, 2, 6, 16, rgba16_rows))
    write("image_decode", "palette_2x2.png", png(2, 2, 3, 8, [b"\0\1", b"\2\0"], palette=b"\xff\0\0\0\xff\0\0\0\xff"))

    source = os.path.join(tmp, "jpeg_writer.c")
    binary = os.path.join(tmp, "jpeg_writer")
    with open(source, "w") as f:
        f.write(JPEG_WRITER)
    subprocess.run([os.environ.get("CC", "cc"), "-O1", "-o", binary, source, "-ljpeg"], check=True)
    for name, width, height, components, progressive in [("rgb_8x8.jpg", 8, 8, 3, 0), ("grey_9x5.jpg", 9, 5, 1, 0),
                                                         ("progressive_17x9.jpg", 17, 9, 3, 1)]:
        path = os.path.join(tmp, name)
        subprocess.run([binary, path, str(width), str(height), str(components), str(progressive)], check=True)
        with open(path, "rb") as f:
            write("image_decode", name, f.read())


# --- net descriptions -----------------------------------------------------------
def net_description_seeds():
    lenet = {
        "format": "disttrain.net", "version": 1,
        "inputs": [{"name": "data", "shape": [1, 28, 28]}],
        "layers": [
            {"name": "conv1", "type": "Conv2D", "channels": 20, "kernel_size": 5},
            {"name": "act1", "type": "ReLU"},
            {"name": "pool1", "type": "MaxPool2D", "pool_size": 2, "strides": 2},
            {"name": "flatten", "type": "Flatten"},
            {"name": "fc1", "type": "Dense", "units": 10, "weight_initializer": {"kind": "normal", "scale": 0.01}},
        ],
        "output": "fc1",
        "loss": {"type": "SoftmaxCrossEntropy", "reduction": "mean"},
    }
    write("net_description", "lenet", json.dumps(lenet, indent=1))
    residual = {
        "format": "disttrain.net", "version": 1,
        "inputs": [{"name": "x", "shape": [64, 8, 8]}],
        "layers": [
            {"name": "b.conv1", "type": "Conv2D", "inputs": ["x"], "channels": 64, "kernel_size": 3, "padding": 1},
            {"name": "b.relu", "type": "ReLU"},
            {"name": "b.add", "type": "Add", "inputs": ["b.relu", "x"]},
            {"name": "gap", "type": "GlobalAvgPool2D"},
            {"name": "fc", "type": "Dense", "units": 10, "use_bias": False},
        ],
        "loss": {"reduction": "sum"},
    }
    write("net_description", "residual", json.dumps(residual))
    # Found by net_description_fuzzer: a number beyond a double escaped as nlohmann's out_of_range.
    write("net_description", "regression_number_overflow", '{"format":"disttrain.net","version":1e999}')
    write("net_description", "minimal",
          '{"format":"disttrain.net","version":1,"inputs":[{"name":"d","shape":[4]}],'
          '"layers":[{"name":"fc","type":"Dense","units":2}]}')


# --- job environment, host lists, hostfiles, handshakes ---------------------------
def text_seeds():
    for name, text in [("ranges", "node[01-03,7],gpu-a1"), ("nested", "r[1-2]n[1-2]"), ("plain", "host"),
                       ("padded", "n[001-010]x,m[8-11]")]:
        write("hostlist", name, text)

    mx_config = {"cluster": {"scheduler": [{"url": "10.0.0.1", "port": 9091}],
                             "server": [{"url": "10.0.0.2", "port": 9092}],
                             "worker": [{"url": "10.0.0.3", "port": 9093}, {"url": "10.0.0.4", "port": 9094}]},
                 "labels": {"scheduler": "", "server": "", "worker": ""},
                 "task": {"type": "worker", "index": 1}}
    env = {
        "mx_config": "MX_CONFIG=" + json.dumps(mx_config, separators=(",", ":")),
        "dmlc": "DMLC_ROLE=worker\nDMLC_WORKER_ID=1\nDMLC_NUM_SERVER=2\nDMLC_NUM_WORKER=3\n"
                "DMLC_PS_ROOT_URI=10.0.0.1\nDMLC_PS_ROOT_PORT=9091",
        "torch": "RANK=3\nWORLD_SIZE=4\nMASTER_ADDR=10.0.0.1\nMASTER_PORT=29500\nDT_NUM_SERVER=1",
        "openmpi": "OMPI_COMM_WORLD_RANK=0\nOMPI_COMM_WORLD_SIZE=2",
        "pmi": "PMI_RANK=1\nPMI_SIZE=4\nDMLC_NUM_SERVER=2\nDMLC_NUM_WORKER=2",
        "slurm": "SLURM_PROCID=2\nSLURM_NTASKS=4\nSLURM_JOB_NODELIST=node[01-02],gpu7",
    }
    for name, text in env.items():
        write("launcher_environment", name, text + "\n")

    write("dtrun_hostfile", "launch_py", "10.0.0.1\n10.0.0.2:2222\n")
    write("dtrun_hostfile", "extended", "# workers\n  alice@node1  \nbob@node2:22 # comment\n[::1]:2200\nfe80::1\n")

    header = lambda kind: b"DTAH" + bytes([1, kind, 0, 0])
    write("auth_handshake", "hello", header(1) + bytes(range(32)))
    write("auth_handshake", "challenge", header(2) + bytes(range(32)) + bytes(range(100, 132)))
    write("auth_handshake", "proof", header(3) + bytes(range(64, 96)))
    write("auth_handshake", "accepted", header(4))
    write("auth_handshake", "refused", header(5) + b"wrong job secret")


def main():
    owned = ["ps_frame", "gradient_codec", "ps_request_text", "safetensors", "idx", "cifar", "image_decode",
             "net_description", "hostlist", "launcher_environment", "dtrun_hostfile", "auth_handshake", "recordio"]
    for target in owned:
        shutil.rmtree(os.path.join(HERE, target), ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        ps_frames(tmp)
        image_seeds(tmp)
    gradient_codec()
    ps_request_text()
    safetensors_seeds()
    idx_seeds()
    cifar_seeds()
    recordio_seeds()
    net_description_seeds()
    text_seeds()


if __name__ == "__main__":
    main()
