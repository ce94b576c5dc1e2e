#!/usr/bin/python3
"""scripts/plot-metrics on hand-made metrics logs: two workers' logs give a
PNG of the requested size, and each kind of bad input gives exit status 1
with one "plot-metrics: error:" line naming the problem, not a traceback.

  plot_metrics_test.py SCRIPTS/plot-metrics WORKDIR
"""
import importlib.machinery
import importlib.util
import os
import shutil
import struct
import subprocess
import sys
import tempfile

LINE = ('{{"epoch":{epoch},"loss":{loss},"train_accuracy":{train},{test}"images_per_s":1500.5,'
        '"seconds":16.1,"compute_fraction":0.82,"bytes_sent":431080,"bytes_received":431080}}\n')


def log(path, rows):
    with open(path, "w") as f:
        for epoch, loss, train, test in rows:
            test_field = "" if test is None else f'"test_accuracy":{test},'
            f.write(LINE.format(epoch=epoch, loss=loss, train=train, test=test_field))


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        raise AssertionError(f"{path} is not a PNG")
    return struct.unpack(">II", head[16:24])


def run(tool, *args):
    return subprocess.run([tool, *args], capture_output=True, text=True, timeout=120)


def main():
    tool, workdir = sys.argv[1], sys.argv[2]
    os.makedirs(workdir, exist_ok=True)
    work = tempfile.mkdtemp(dir=workdir)
    failures = []

    w0, w1 = os.path.join(work, "worker-0.jsonl"), os.path.join(work, "worker-1.jsonl")
    # Epoch 3 of worker 0 was not evaluated and diverged (the log writes NaN as null).
    log(w0, [(1, 0.92, 0.66, 0.78), (2, 0.51, 0.81, 0.84), (3, "null", 0.85, None)])
    log(w1, [(1, 0.95, 0.65, 0.77), (2, 0.55, 0.80, 0.83), (3, 0.45, 0.84, 0.86)])
    png = os.path.join(work, "curves.png")
    r = run(tool, "-o", png, "--size", "900x400", "--title", "two workers", w0, w1)
    if r.returncode != 0:
        failures.append(f"two workers' logs: exit {r.returncode}: {r.stderr.strip()}")
    elif r.stdout.strip() != png:
        failures.append(f"printed {r.stdout.strip()!r}, not the PNG's path {png!r}")
    elif png_size(png) != (900, 400):
        failures.append(f"the PNG is {png_size(png)}, not (900, 400)")

    # The logs as the script reads them: an epoch without test_accuracy has
    # no test point (a worker that never evaluates gets no test line), a null
    # loss is a gap.
    loader = importlib.machinery.SourceFileLoader("plot_metrics", tool)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("plot_metrics", loader))
    loader.exec_module(module)
    read = module.read_log(w0)
    if read["test_epoch"] != [1, 2] or read["test_accuracy"] != [0.78, 0.84]:
        failures.append(f"worker 0's test points: {read['test_epoch']} {read['test_accuracy']}, not [1, 2] [0.78, 0.84]")
    if read["epoch"] != [1, 2, 3] or read["loss"][2] == read["loss"][2]:
        failures.append(f"worker 0's epochs {read['epoch']} and loss {read['loss']}: epoch 3's loss should be NaN")
    train_only = os.path.join(work, "train-only.jsonl")
    log(train_only, [(1, 0.9, 0.6, None), (2, 0.5, 0.8, None)])
    if module.read_log(train_only)["test_epoch"]:
        failures.append("a log without test_accuracy has test points")

    # Without -o: next to the first log, default size.
    r = run(tool, w1)
    beside = os.path.join(work, "worker-1.png")
    if r.returncode != 0 or not os.path.exists(beside) or png_size(beside) != (1200, 500):
        failures.append(f"default output: exit {r.returncode}, {r.stderr.strip()}")

    bad = {
        "not-json.jsonl": ("epoch 1 loss 0.5\n", "not-json.jsonl:1: not a JSON line"),
        "no-loss.jsonl": ('{"epoch":1,"train_accuracy":0.5}\n', 'no "loss" field'),
        "text-loss.jsonl": ('{"epoch":1,"loss":"high","train_accuracy":0.5}\n', '"loss" is "high", not a number'),
        "array.jsonl": ("[1, 2]\n", "a JSON object was expected"),
        "empty.jsonl": ("", "holds no metrics lines"),
    }
    cases = []
    for name, (content, expected) in bad.items():
        path = os.path.join(work, name)
        with open(path, "w") as f:
            f.write(content)
        cases.append(([path], expected))
    cases.append(([os.path.join(work, "missing.jsonl")], "cannot read"))
    cases.append((["-o", os.path.join(work, "no-such-dir", "x.png"), w0], "cannot write"))
    for args, expected in cases:
        r = run(tool, *args)
        if r.returncode != 1 or "Traceback" in r.stderr or "plot-metrics: error: " not in r.stderr \
                or expected not in r.stderr:
            failures.append(f"{args}: exit {r.returncode}, expected 1 and {expected!r}; stderr: {r.stderr.strip()}")

    for failure in failures:
        print("FAIL:", failure)
    if failures:
        return 1
    print(f"OK: a 900x400 PNG of two workers; {len(cases)} bad inputs answered with one error line each")
    shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
