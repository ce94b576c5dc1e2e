#!/bin/sh
# examples/go/train_image_classifier (the C walkthrough through the Go
# binding) on the synthetic CIFAR-10 directory of the C example's test:
# ResNet-18 as a dist_sync job under dtrun (a scheduler, one server, two Go
# workers), one epoch of five steps per worker with two loader threads.
# Passes when the job ends cleanly, worker 0 prints test_accuracy=<fraction>
# and its metrics log has its line with a finite loss.
set -eu
example="$1"
dtrun="$2"
work=$(mktemp -d "${TMPDIR:-/tmp}/dt-cifar-go-example.XXXXXX")
trap 'rm -rf "$work"' EXIT

python3 "$(dirname "$0")/write_synthetic_cifar.py" "$work"

"$dtrun" -n 2 -s 1 --timeout 300 -- "$example" --data "$work" --model resnet18 --kvstore dist_sync --epochs 1 \
  --batch-size 8 --threads 1 --loader-threads 2 --lr-period 1 --lr-decay 0.5 --metrics "$work/metrics.jsonl" \
  > "$work/dist.log" 2>&1 || { cat "$work/dist.log"; echo "FAIL: the dist_sync job failed"; exit 1; }
cat "$work/dist.log"
grep -q '\[worker 0\] test_accuracy=' "$work/dist.log" || { echo "FAIL: no test_accuracy from worker 0"; exit 1; }
grep -q 'job finished: every process exited cleanly' "$work/dist.log" || { echo "FAIL: the job did not end cleanly"; exit 1; }
[ "$(wc -l < "$work/metrics.jsonl")" -eq 1 ] || { echo "FAIL: the metrics log should have one line"; exit 1; }
grep -q '"loss":[0-9]' "$work/metrics.jsonl" || { echo "FAIL: no finite loss in the metrics log"; exit 1; }
echo "OK: ResNet-18 through the Go binding under dtrun dist_sync on synthetic CIFAR-10"
