#!/bin/sh
# examples/c/train_image_classifier on a small synthetic CIFAR-10 directory
# that this test writes (5 training files of 16 records, a test file of 16):
# d2l's ResNet-18 with its lr_period/lr_decay schedule for one epoch in one
# process, then VGG-11 + BatchNorm as a dist_sync job under dtrun (a
# scheduler, one server, two workers), launched as launch.py is, without "--". Passes when both
# finish, print test_accuracy=<fraction>, and the metrics log has its line.
set -eu
example="$1"
dtrun="$2"
work=$(mktemp -d "${TMPDIR:-/tmp}/dt-cifar-example.XXXXXX")
trap 'rm -rf "$work"' EXIT

python3 "$(dirname "$0")/write_synthetic_cifar.py" "$work"

"$example" --data "$work" --model resnet18_d2l --epochs 1 --batch-size 16 --threads 1 --lr-period 1 --lr-decay 0.9 \
  --metrics "$work/metrics.jsonl" > "$work/local.log"
cat "$work/local.log"
grep -q '^test_accuracy=' "$work/local.log" || { echo "FAIL: no test_accuracy from the local run"; exit 1; }
[ "$(wc -l < "$work/metrics.jsonl")" -eq 1 ] || { echo "FAIL: the metrics log should have one line"; exit 1; }
grep -q '"loss":[0-9]' "$work/metrics.jsonl" || { echo "FAIL: no finite loss in the metrics log"; exit 1; }

# launch.py's habit: the command starts at the first word that is not an option, no "--".
"$dtrun" -n 2 -s 1 --timeout 300 "$example" --data "$work" --model vgg11_bn_cifar --kvstore dist_sync --epochs 1 \
  --batch-size 8 --threads 1 > "$work/dist.log" 2>&1 || { cat "$work/dist.log"; echo "FAIL: the dist_sync job failed"; exit 1; }
cat "$work/dist.log"
grep -q '\[worker 0\] test_accuracy=' "$work/dist.log" || { echo "FAIL: no test_accuracy from worker 0"; exit 1; }
grep -q 'job finished: every process exited cleanly' "$work/dist.log" || { echo "FAIL: the job did not end cleanly"; exit 1; }
echo "OK: d2l's ResNet-18 and schedule locally and VGG-11 + BatchNorm under dtrun dist_sync on synthetic CIFAR-10"
