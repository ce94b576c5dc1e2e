#!/bin/bash
# dtrun --timeline (issue 40, item 1): a 2-server 2-worker dist_sync LeNet
# job on a small slice of Fashion-MNIST (1280 training samples: 20 steps per
# worker at batch 32) under dtrun --timeline; the merged file must be valid
# trace-event JSON with every process, nested events, and each round's
# server sums ending before any worker's pull of that round ends
# (tests/tools/check_timeline.py); with DT_TIMELINE_LAYERS=1, every layer's
# spans too.
#
#   dist_timeline.sh DTRUN EXAMPLE
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dtrun="$1" example="$2"
work=$(mktemp -d "${TMPDIR:-/tmp}/dt-timeline.XXXXXX")
trap 'rm -rf "$work"' EXIT

python3 "$here/../tools/write_idx_subset.py" /usr/share/datasets/fashion-mnist "$work/data" 1280 256
export OMP_WAIT_POLICY=passive DT_STARTUP_TIMEOUT_S=60
if ! "$dtrun" -n 2 -s 2 --timeline "$work/job.json" --env DT_TIMELINE_LAYERS=1 --timeout 300 -- \
    "$example" --kvstore dist_sync --epochs 1 --batch-size 32 --threads 1 --data "$work/data" > "$work/job.log" 2>&1; then
  cat "$work/job.log"
  echo "FAIL: the job failed"
  exit 1
fi
grep "timeline" "$work/job.log" || true
ls "$work"/job.json.* 2>/dev/null && { echo "FAIL: parts left beside the merged timeline"; exit 1; }
# DT_TIMELINE_LAYERS=1: LeNet's layers have spans of their own (nested in
# forward and backward, which the checker's nesting covers).
grep -q '"name":"conv1"' "$work/job.json" || { echo "FAIL: no per-layer spans"; exit 1; }
python3 "$here/../tools/check_timeline.py" "$work/job.json" 2 2
