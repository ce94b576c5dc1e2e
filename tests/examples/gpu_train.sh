#!/bin/sh
# A training example on the GPU: the command with FLAGS (e.g. --gpus 0) must
# train, name its GPU contexts on the start line and reach MIN test
# accuracy. Exits 77 (CTest: skipped) on a machine where nvidia-smi finds no
# GPU.
#
#   gpu_train.sh MIN "FLAGS" command [args...]
set -eu
min="$1"
flags="$2"
shift 2
gpus=0
if command -v nvidia-smi > /dev/null 2>&1; then
  gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU ' || true)
fi
if [ "$gpus" -eq 0 ]; then
  echo "skipped: no GPU on this machine"
  exit 77
fi
log=$(mktemp "${TMPDIR:-/tmp}/dt-gpu-example.XXXXXX")
trap 'rm -f "$log"' EXIT
status=0
# shellcheck disable=SC2086 # FLAGS is a list of flags
"$@" $flags > "$log" 2>&1 || status=$?
cat "$log"
[ "$status" -eq 0 ] || { echo "FAIL: the example exited with $status"; exit 1; }
grep -q 'contexts gpu(' "$log" || { echo "FAIL: the start line names no GPU context"; exit 1; }
accuracy=$(sed -n 's/.*test_accuracy=\([0-9.]*\)$/\1/p' "$log" | tail -n 1)
[ -n "$accuracy" ] || { echo "FAIL: no test_accuracy= line"; exit 1; }
awk -v a="$accuracy" -v m="$min" 'BEGIN { exit !(a >= m) }' || { echo "FAIL: test_accuracy=$accuracy < $min"; exit 1; }
echo "OK: test_accuracy=$accuracy >= $min with $flags"
