#!/usr/bin/env bash
# The examples' part of scripts/gpu-check.sh (issue 37, items 3 and 6),
# called by it once the library and the examples are built:
#  1. builds dtrun and dt-node, which the gpu test example_gpu_kvstores
#     (tests/examples/gpu_kvstores.sh: every GPU store from the examples
#     against a CPU run, ~3 min on one GPU) needs; gpu-check.sh's
#     `ctest -L gpu` then runs it with the other gpu tests;
#  2. time to accuracy on Fashion-MNIST beside PyTorch
#     (bench/time_to_accuracy.sh: LeNet 2 epochs, target 0.87; ResNet-18
#     with a one-channel stem 2 epochs, target 0.90; ours then PyTorch's, one
#     round: ~3 min on an H200) into OUT/time_to_accuracy.jsonl and
#     OUT/time_to_accuracy.txt (the table).
#
#   scripts/gpu-check-examples.sh BUILD OUT [JOBS]
# Environment: DT_GPU_TTA=0 skips step 2 (so does DT_GPU_BENCH=0, as for
# gpu-check.sh's other benchmarks); DT_TTA_* (see bench/time_to_accuracy.sh)
# change its budgets, e.g. DT_TTA_RESNET18_EPOCHS=1 where time is short.
set -uo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
build="$1" out="$2" jobs="${3:-$(nproc)}"
log() { echo "gpu-check-examples: $*" | tee -a "$out/summary.txt"; }

start=$(date +%s)
cmake --build "$build" -j"$jobs" --target dtrun dt-node >>"$out/build.log" 2>&1 ||
  log "dtrun or dt-node not built: example_gpu_kvstores will fail"
log "dtrun and dt-node built in $(( $(date +%s) - start )) s"

if [ "${DT_GPU_TTA:-1}" != "0" ] && [ "${DT_GPU_BENCH:-1}" != "0" ]; then
  example="$(find "$build" -name train_fashion_mnist -type f -perm -u+x -print -quit)"
  if [ -z "$example" ]; then
    log "time to accuracy: no train_fashion_mnist in $build"
  else
    start=$(date +%s)
    DT_TTA_LENET_EPOCHS="${DT_TTA_LENET_EPOCHS:-2}" DT_TTA_LENET_TARGET="${DT_TTA_LENET_TARGET:-0.87}" \
    DT_TTA_RESNET18_EPOCHS="${DT_TTA_RESNET18_EPOCHS:-2}" DT_TTA_RESNET18_TARGET="${DT_TTA_RESNET18_TARGET:-0.90}" \
    DT_TTA_TIMEOUT="${DT_TTA_TIMEOUT:-240}" \
      "$repo/bench/time_to_accuracy.sh" "$example" "$out/time_to_accuracy.jsonl" \
      >"$out/time_to_accuracy.txt" 2>>"$out/bench.log"
    log "time to accuracy: exit $? in $(( $(date +%s) - start )) s"
    tee -a "$out/summary.txt" < "$out/time_to_accuracy.txt" | grep -v '^{'
  fi
fi
