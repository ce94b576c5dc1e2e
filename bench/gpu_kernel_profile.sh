#!/usr/bin/env bash
# Where a GPU training step spends its time, kernel by kernel, for
# disttrain's nn_throughput and PyTorch's peer (bench/peers/
# torch_nn_throughput.py) on the same GPU: Nsight Compute (ncu) times every
# kernel of a few steps, and the summary prints, per program, the kernels
# that take the most time per step, as JSON lines.
#
#   bench/gpu_kernel_profile.sh BUILD_DIR [OUT] [MODEL] [PRECISION]
#     BUILD_DIR  a build with CUDA (scripts/gpu-check.sh makes build-gpu-check)
#     OUT        default $OUT, else BUILD_DIR/kernel-profile: ncu's CSV files
#     MODEL      resnet18 (default) or lenet; PRECISION fp32 (default), fp16, bf16
#
# One line per kernel and program: {"program", "kernel", "launches_per_step",
# "us_per_step", "share"}, the 15 largest of each, then one "total" line each.
# ncu replays kernels one at a time, clocks left as they are
# (--clock-control none): the sums are the kernels' own times, without the
# gaps between launches that a real step also has, so they say where the
# device time goes, not the step's wall time (nn_throughput says that).
set -uo pipefail

build="$(cd "$1" && pwd)"
out="${2:-${OUT:-$build/kernel-profile}}"
model="${3:-resnet18}"
precision="${4:-fp32}"
repo="$(cd "$(dirname "$0")/.." && pwd)"
# Two warm-up steps (cuDNN's heuristics, the caching allocator) and three
# measured ones; only the measured ones' kernels are summed.
warmup=2
steps=3
mkdir -p "$out"
command -v ncu >/dev/null || { echo "gpu_kernel_profile: ncu (Nsight Compute) is not on the PATH" >&2; exit 2; }

profile() {  # NAME COMMAND...
  local name=$1
  shift
  timeout "${DT_PROFILE_TIMEOUT:-240}" ncu --clock-control none --metrics gpu__time_duration.sum --csv \
    --page raw --print-units base --log-file "$out/$name.csv" "$@" > "$out/$name.stdout" 2>&1 ||
    echo "gpu_kernel_profile: $name exited with $? (see $out/$name.stdout)" >&2
}

profile disttrain "$build/bench/nn_throughput" --device gpu --precision "$precision" --model "$model" \
  --warmup "$warmup" --steps "$steps"
profile pytorch python3 "$repo/bench/peers/torch_nn_throughput.py" --device gpu --precision "$precision" \
  --model "$model" --warmup "$warmup" --steps "$steps"

python3 - "$out" "$warmup" "$steps" <<'EOF'
import csv, json, os, sys
from collections import defaultdict

out, warmup, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for program in ("disttrain", "pytorch"):
    path = os.path.join(out, program + ".csv")
    rows = []
    if os.path.exists(path):
        with open(path) as f:
            lines = [line for line in f if line.startswith('"')]
        reader = csv.DictReader(lines)
        scale = 1.0
        for row in reader:
            value = row.get("gpu__time_duration.sum", "")
            try:
                rows.append((row["Kernel Name"], float(value.replace(",", "")) * scale))
            except (KeyError, ValueError):
                # The units row, under the header: to nanoseconds.
                scale = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6,
                         "second": 1e9, "s": 1e9}.get(value.strip(), scale)
    if not rows:
        print(json.dumps({"program": program, "error": "no kernels profiled (see %s)" % path}))
        continue
    # The launches of the measured steps are the last steps / (warmup + steps)
    # of them: every step launches the same kernels.
    measured = rows[len(rows) * warmup // (warmup + steps):]
    per_kernel = defaultdict(lambda: [0, 0.0])
    for name, ns in measured:
        per_kernel[name][0] += 1
        per_kernel[name][1] += ns
    total = sum(t for _, t in per_kernel.values())
    ranked = sorted(per_kernel.items(), key=lambda kv: -kv[1][1])
    for name, (count, ns) in ranked[:15]:
        print(json.dumps({"program": program, "kernel": name[:120], "launches_per_step": round(count / steps, 1),
                          "us_per_step": round(ns / steps / 1000, 1), "share": round(ns / total, 3)}))
    print(json.dumps({"program": program, "kernel": "total", "launches_per_step": round(len(measured) / steps, 1),
                      "us_per_step": round(total / steps / 1000, 1), "share": 1.0}))
EOF
