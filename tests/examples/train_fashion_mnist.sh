#!/bin/sh
# End-to-end run of examples/c/train_fashion_mnist on the real data: one epoch
# with a metrics log and a checkpoint, then a resumed second epoch. Passes when
# both runs finish, the log has one line per epoch, and the final test
# accuracy reaches 0.80 (an untrained LeNet scores about 0.10).
set -eu
binary="$1"
work=$(mktemp -d "${TMPDIR:-/tmp}/dt-train-example.XXXXXX")
trap 'rm -rf "$work"' EXIT

# One thread: the test runs beside others on 2 cores.
"$binary" --epochs 1 --threads 1 --metrics "$work/metrics.jsonl" --checkpoint "$work/ckpt.safetensors" \
  > "$work/first.log"
"$binary" --epochs 2 --threads 1 --metrics "$work/metrics.jsonl" --resume "$work/ckpt.safetensors" \
  > "$work/second.log"
cat "$work/first.log" "$work/second.log"

lines=$(wc -l < "$work/metrics.jsonl")
[ "$lines" -eq 2 ] || { echo "FAIL: metrics log has $lines lines, expected 2"; exit 1; }
grep -q '"epoch":2' "$work/metrics.jsonl" || { echo "FAIL: no epoch 2 in the metrics log"; exit 1; }
grep -q 'resumed from .* after epoch 1' "$work/second.log" || { echo "FAIL: the second run did not resume"; exit 1; }
accuracy=$(sed -n 's/^test_accuracy=//p' "$work/second.log")
awk -v a="$accuracy" 'BEGIN { exit !(a >= 0.80) }' || { echo "FAIL: test_accuracy=$accuracy < 0.80"; exit 1; }
echo "OK: test_accuracy=$accuracy after a resumed second epoch"
