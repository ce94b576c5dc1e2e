#!/usr/bin/env bash
# The main job: installs what is missing, builds what the job runs (the
# library, dtrun, dt-node and the C example: no tests), and trains LeNet on
# Fashion-MNIST (/usr/share/datasets/fashion-mnist) with dist_sync, launched by
# dtrun on this machine: 1 scheduler, 2 servers and 2 workers (each on its half
# of the data, batch 32, one kernel thread, 5 epochs). Worker 0 prints the
# per-epoch progress; scripts/plot-metrics draws the workers' metrics logs
# (loss and accuracy per epoch, one line per worker) to metrics.png beside
# the logs, and the script prints that path, then ends with
# test_accuracy=<fraction>.
#
#   scripts/demo.sh [--local] [example args, e.g. --epochs 1]
#
# --local runs the single-process job instead (kvstore local, batch 64).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=dist
if [ "${1:-}" = "--local" ]; then mode=local; shift; fi
scripts/install-deps.sh
echo "demo: building the library, dtrun, dt-node and the example into build/ (a first build takes minutes)"
BUILD_DIR=build scripts/build.sh --main-job >/dev/null
out_dir="${DT_DEMO_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/disttrain-demo.XXXXXX")}"
echo "demo: metrics, checkpoint and logs go to $out_dir"
if [ "$mode" = local ]; then
  mkdir -p "$out_dir/logs"
  log="$out_dir/logs/local.log"
  build/examples/train_fashion_mnist --model lenet --epochs 5 --batch-size 64 --lr 0.02 --momentum 0.9 \
    --kvstore local --metrics "$out_dir/metrics.jsonl" --checkpoint "$out_dir/lenet.safetensors" "$@" |
    tee "$log"
else
  log="$out_dir/logs/worker-0.log"
  # --lr is the rate for the global batch (2 x 32), as for the local run's 64.
  # Only worker 0 evaluates; every worker writes its own metrics log.
  build/dtrun -n 2 -s 2 --log-dir "$out_dir/logs" -- \
    build/examples/train_fashion_mnist --model lenet --epochs 5 --batch-size 32 --lr 0.02 --momentum 0.9 \
    --kvstore dist_sync --threads 1 --metrics "$out_dir/metrics.jsonl" --checkpoint "$out_dir/lenet.safetensors" "$@"
fi
# One line per worker: rank 1 writes metrics-worker1.jsonl (train loss and
# accuracy on its half; only worker 0 also measures test accuracy).
logs=("$out_dir/metrics.jsonl")
labels=(--label "worker 0")
if [ -f "$out_dir/metrics-worker1.jsonl" ]; then
  logs+=("$out_dir/metrics-worker1.jsonl")
  labels+=(--label "worker 1")
fi
png=$(scripts/plot-metrics "${labels[@]}" --title "LeNet on Fashion-MNIST ($mode)" \
  -o "$out_dir/metrics.png" "${logs[@]}")
echo "demo: training curves (loss, accuracy per epoch): $png"
# dtrun prefixes worker 0's lines; the job's result is also said plainly last.
grep '^test_accuracy=' "$log"
