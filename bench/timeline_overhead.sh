#!/bin/bash
# What the timeline costs a training step (issue 40): the 2-server 2-worker
# dist_sync LeNet job of examples/c/train_fashion_mnist under dtrun, run
# ROUNDS times with the timeline off and on, alternated in the same session
# (these machines drift between runs), on the first SAMPLES training images.
# Prints one JSON line per run and a summary: worker 0's mean step time
# (batch / its epoch's images per second) per setting.
#
#   bench/timeline_overhead.sh [--build-dir DIR] [--rounds N] [--samples N] [--batch N]
set -euo pipefail
build=build rounds=3 samples=12800 batch=32
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --samples) samples="$2"; shift 2 ;;
    --batch) batch="$2"; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/dt-timeline-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
python3 "$root/tests/tools/write_idx_subset.py" /usr/share/datasets/fashion-mnist "$work/data" "$samples" 1000
export OMP_WAIT_POLICY=passive
steps=$(( samples / 2 / batch ))

run() {  # MODE: prints worker 0's ms per step
  local mode="$1" args=()
  [ "$mode" = on ] && args=(--timeline "$work/job.json")
  "$build/dtrun" -n 2 -s 2 "${args[@]}" --timeout 600 -- "$build/examples/train_fashion_mnist" \
    --kvstore dist_sync --epochs 1 --batch-size "$batch" --threads 1 --data "$work/data" > "$work/log" 2>&1 ||
    { cat "$work/log" >&2; exit 1; }
  local rate
  rate=$(sed -n 's/^\[worker 0\] epoch 1\/1: .* \([0-9.]*\) img\/s .*/\1/p' "$work/log")
  awk -v r="$rate" -v b="$batch" 'BEGIN { printf "%.3f", 1000 * b / r }'
}

off=() on=()
for r in $(seq 1 "$rounds"); do
  for mode in off on; do
    ms=$(run "$mode")
    echo "{\"bench\":\"timeline_overhead\",\"round\":$r,\"timeline\":\"$mode\",\"step_ms\":$ms,\"steps\":$steps,\"batch\":$batch}"
    if [ "$mode" = off ]; then off+=("$ms"); else on+=("$ms"); fi
  done
done
mean() { printf '%s\n' "$@" | awk '{ s += $1 } END { printf "%.3f", s / NR }'; }
echo "{\"bench\":\"timeline_overhead\",\"summary\":true,\"off_step_ms\":$(mean "${off[@]}"),\"on_step_ms\":$(mean "${on[@]}"),\"rounds\":$rounds}"
