#!/usr/bin/env python3
"""The ratios issue 38 asks for, from the JSON lines that scripts/gpu-check.sh
collects: nn_throughput's lines (no "peer" key) beside
bench/peers/torch_nn_throughput.py's, all from one run on one GPU.

usage: gpu-ratios.py SPEED_JSONL [DIST_JSONL]

Each figure is the median of its repetitions. Against PyTorch the ratio is
taken to PyTorch's best variant of that row (tuned eager, or compiled when
compiled runs are there), and each variant is listed. Prints a table, then
one JSON line per ratio ("ratio" lines) for whoever reads the log by program.
"""
import json
import statistics
import sys

# Issue 38's targets: ours / PyTorch's best, at least this much.
SPEED_TARGET = {"resnet18": 1.15, "lenet": 1.5}
DIST_TARGET = 1.2          # two processes on one GPU vs DDP with two
NCCL_ONE_RANK_TARGET = 0.97  # dist_nccl with one rank vs no store


def read(path):
    lines = []
    try:
        with open(path) as f:
            for text in f:
                # dtrun prefixes each worker's lines with "[worker N] ".
                brace = text.find("{")
                if brace < 0:
                    continue
                try:
                    line = json.loads(text[brace:])
                except ValueError:
                    continue
                if isinstance(line, dict) and "images_per_s" in line:
                    lines.append(line)
    except OSError:
        pass
    return lines


def variant(line):
    """How a PyTorch line was tuned, in words."""
    parts = ["cudnn.benchmark" if line.get("cudnn_benchmark") else "plain"]
    if line.get("channels_last"):
        parts.append("channels_last")
    if line.get("compile", "none") != "none":
        parts.append("compile=" + line["compile"])
    if line.get("ddp_workers"):
        parts.append("DDP gloo x%d" % line["ddp_workers"])
    return "+".join(parts)


def median(values):
    return statistics.median(values) if values else None


def emit(kind, what, ratio, target, extra):
    verdict = "n/a" if ratio is None else ("meets" if ratio >= target else "misses")
    record = {"ratio": kind, "what": what, "value": None if ratio is None else round(ratio, 3),
              "target": target, "verdict": verdict}
    record.update(extra)
    return record


def speed_rows(lines):
    records = []
    rows = {}
    nhwc = {}  # ours with DT_CONV_LAYOUT=NHWC, per (model, batch, precision)
    for line in lines:
        if line.get("kvstore") or line.get("ddp_workers"):
            continue
        if line.get("layout") == "NHWC":
            nhwc.setdefault((line["model"], line["batch"], line["precision"]), []).append(line["images_per_s"])
            continue
        key = (line["model"], line["batch"], line["precision"])
        side = rows.setdefault(key, {"ours": [], "ours_peak": [], "torch": {}, "torch_peak": {}})
        if "peer" in line:
            name = variant(line)
            side["torch"].setdefault(name, []).append(line["images_per_s"])
            if line.get("peak_bytes") is not None:
                side["torch_peak"].setdefault(name, []).append(line["peak_bytes"])
        else:
            side["ours"].append(line["images_per_s"])
            if line.get("peak_bytes") is not None:
                side["ours_peak"].append(line["peak_bytes"])
    print("\n%-9s %5s %5s %10s %10s %7s %6s  %s" % ("model", "batch", "prec", "ours img/s", "torch best",
                                                   "ratio", "target", "PyTorch variants (median img/s)"))
    for key in sorted(rows):
        model, batch, precision = key
        side = rows[key]
        ours = median(side["ours"])
        torch_medians = {name: median(v) for name, v in side["torch"].items()}
        best_name = max(torch_medians, key=torch_medians.get) if torch_medians else None
        best = torch_medians.get(best_name)
        ratio = ours / best if ours and best else None
        target = SPEED_TARGET.get(model, 1.0)
        variants = ", ".join("%s %.0f" % (n, v) for n, v in sorted(torch_medians.items()))
        print("%-9s %5d %5s %10s %10s %7s %6.2f  %s (ours n=%d)" % (
            model, batch, precision, "%.0f" % ours if ours else "-", "%.0f" % best if best else "-",
            "%.2fx" % ratio if ratio else "-", target, variants or "-", len(side["ours"])))
        records.append(emit("speed", "%s batch %d %s" % (model, batch, precision), ratio, target,
                            {"ours": ours, "torch_best": best, "torch_best_variant": best_name,
                             "torch_variants": torch_medians}))
        # Memory: beside PyTorch's eager tuned run (compiled graphs keep
        # other buffers), lower is better, so the target is ours <= torch.
        eager = [n for n in side["torch_peak"] if "compile=" not in n]
        ours_peak = median(side["ours_peak"])
        if eager and ours_peak:
            torch_peak = median(side["torch_peak"][eager[0]])
            records.append(emit("peak_memory", "%s batch %d %s" % (model, batch, precision),
                                torch_peak / ours_peak, 1.0,
                                {"ours_peak_bytes": ours_peak, "torch_peak_bytes": torch_peak,
                                 "torch_variant": eager[0], "note": "torch peak / ours: >= 1 means ours is lower"}))
    if nhwc:
        print("\nNHWC (DT_CONV_LAYOUT=NHWC) beside our NCHW run and tuned PyTorch's best")
    for key in sorted(nhwc):
        model, batch, precision = key
        ours_nhwc = median(nhwc[key])
        side = rows.get(key, {"ours": [], "torch": {}})
        ours_nchw = median(side["ours"])
        torch_medians = {name: median(v) for name, v in side["torch"].items()}
        best = max(torch_medians.values()) if torch_medians else None
        print("  %-9s %5d %5s  nhwc %8.0f  nchw %8s  nhwc/nchw %6s  nhwc/torch %6s" % (
            model, batch, precision, ours_nhwc, "%.0f" % ours_nchw if ours_nchw else "-",
            "%.2f" % (ours_nhwc / ours_nchw) if ours_nchw else "-", "%.2f" % (ours_nhwc / best) if best else "-"))
        records.append(emit("nhwc_vs_nchw", "ours %s batch %d %s" % key, ours_nhwc / ours_nchw if ours_nchw else None,
                            1.0, {"nhwc": ours_nhwc, "nchw": ours_nchw}))
        records.append(emit("speed_nhwc", "%s batch %d %s" % key, ours_nhwc / best if best else None,
                            SPEED_TARGET.get(model, 1.0), {"ours_nhwc": ours_nhwc, "torch_best": best}))
    lenet = {p: median(rows[k]["ours"]) for k in rows for p in [k[2]] if k[0] == "lenet"}
    if lenet.get("fp16") and lenet.get("bf16"):
        records.append(emit("lenet_fp16_vs_bf16", "ours, LeNet fp16 / bf16", lenet["fp16"] / lenet["bf16"], 1.0, {}))
    peaks = [r for r in records if r["ratio"] == "peak_memory"]
    if peaks:
        print("\npeak memory (allocator's own counts; torch.cuda.max_memory_allocated for PyTorch)")
        for r in peaks:
            print("  %-28s ours %8.1f MiB  torch %8.1f MiB  (%s)  torch/ours %.2f" % (
                r["what"], r["ours_peak_bytes"] / 2**20, r["torch_peak_bytes"] / 2**20, r["torch_variant"],
                r["value"]))
    return records


def dist_rows(lines):
    """Per-worker images/s of rank 0: ours by store, PyTorch's DDP."""
    records = []
    ours, ddp = {}, {}
    for line in lines:
        if "peer" in line:
            if line.get("ddp_workers"):
                ddp.setdefault(line["ddp_workers"], []).append(line["images_per_s"])
        elif line.get("rank", 0) == 0:
            store = line.get("kvstore", "none")
            ours.setdefault((store, line.get("workers", 1)), []).append(line["images_per_s"])
    print("\ntwo processes on one GPU (rank 0's images/s; ResNet-18)")
    for (store, workers), values in sorted(ours.items()):
        print("  ours %-18s x%d  %8.0f  (n=%d)" % (store, workers, median(values), len(values)))
    for workers, values in sorted(ddp.items()):
        print("  torch DDP gloo     x%d  %8.0f  (n=%d)" % (workers, median(values), len(values)))
    torch_two = median(ddp.get(2, []))
    for store in ("dist_sync_device", "allreduce"):
        mine = median(ours.get((store, 2), []))
        records.append(emit("two_processes_one_gpu", store + " x2 / DDP gloo x2",
                            mine / torch_two if mine and torch_two else None, DIST_TARGET,
                            {"ours": mine, "torch": torch_two}))
    nccl = median(ours.get(("dist_nccl", 1), []))
    alone = median(ours.get(("none", 1), []))
    records.append(emit("dist_nccl_one_rank", "dist_nccl x1 / no store", nccl / alone if nccl and alone else None,
                        NCCL_ONE_RANK_TARGET, {"ours": nccl, "no_store": alone}))
    return records


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    records = speed_rows(read(sys.argv[1]))
    if len(sys.argv) > 2:
        records += dist_rows(read(sys.argv[2]))
    print("\nratios against issue 38's targets")
    for r in records:
        print("  %-22s %-40s %6s  target %.2f  %s" % (r["ratio"], r["what"],
                                                    "-" if r["value"] is None else "%.2f" % r["value"],
                                                    r["target"], r["verdict"]))
    for r in records:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
