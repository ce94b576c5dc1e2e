#!/bin/bash
# Every GPU store from the examples (issue 37, item 3; label gpu): LeNet on
# Fashion-MNIST through examples/c/train_fashion_mnist, each store's run
# against one CPU run of the same recipe in this test. Exits 77, which CTest
# reports as skipped, on a machine where hello_ndarray sees no GPU.
#
# Every run has the same global batch (128) and rate (0.02, momentum 0.9),
# so each does the CPU run's arithmetic up to the order of the samples and
# of the sums:
#   cpu                 one process on the CPU, --batch-size 128
#   device, nccl        one process, --gpus 0,0: two replicas on one GPU,
#                       each half of the batch (with 2 GPUs or more,
#                       --gpus 0,1: only then does "nccl" call NCCL; on one
#                       GPU both stores sum in that GPU's memory)
#   dist_sync_device    dtrun -n 2 -s 1, 2 workers x batch 64
#   dist_async_device   dtrun -n 2 -s 1, 2 workers x batch 64 (every push
#                       its own update at the full rate)
#   allreduce           dtrun -n 2 -s 0, 2 workers x batch 64, GPU arrays
#   dist_nccl           dtrun -n 1 -s 0, --gpus local, batch 128 (with 2
#                       GPUs or more also -n 2 x batch 64)
# The workers of a dtrun job take --gpus local (DT_LOCAL_RANK: GPU 0 and
# GPU 1) where there are two GPUs; on a one-GPU machine both take --gpus 0.
# dist_nccl refuses two workers on one GPU by design (NCCL takes one GPU per
# rank; src/collective/gpu_assignment.cc), hence -n 1 there.
#
# Passes when every run exits 0, names its store and a GPU context on its
# start line, and reaches the CPU run's test accuracy less TOLERANCE (1
# point: the runs differ in the order of samples and floating-point sums,
# and the asynchronous store in staleness).
#
#   gpu_kvstores.sh HELLO_NDARRAY TRAIN_FASHION_MNIST DTRUN
# Environment: DT_GPU_KVSTORE_EPOCHS (default 2).
set -euo pipefail
hello="$1" fashion="$2" dtrun="$3"
work=$(mktemp -d "${TMPDIR:-/tmp}/dt-gpu-kvstores.XXXXXX")
trap 'rm -rf "$work"' EXIT

gpus=$("$(dirname "$0")/visible_gpus.sh" "$hello") || { echo "FAIL: no GPU count"; exit 1; }
if [ "$gpus" -eq 0 ]; then
  echo "SKIPPED: no GPU visible"
  exit 77
fi

epochs="${DT_GPU_KVSTORE_EPOCHS:-2}"
tolerance=0.01
recipe=(--model lenet --epochs "$epochs" --lr 0.02 --momentum 0.9 --seed 1)
# Two dtrun workers: one GPU each where there are two.
worker_gpus=0
[ "$gpus" -ge 2 ] && worker_gpus=local
replica_gpus=0,0
[ "$gpus" -ge 2 ] && replica_gpus=0,1
echo "$gpus GPU(s): dtrun workers take --gpus $worker_gpus, one-process replicas --gpus $replica_gpus"
# Several processes share the cores: OpenMP threads must not spin.
export OMP_WAIT_POLICY=passive

# run NAME COMMAND...: runs it, prints the log, leaves it in $work/NAME.log.
run() {
  local name="$1"
  shift
  local start=$(date +%s)
  "$@" > "$work/$name.log" 2>&1 || { cat "$work/$name.log"; echo "FAIL: $name: $* exited $?"; exit 1; }
  cat "$work/$name.log"
  echo "($name: $(( $(date +%s) - start )) s)"
}
# The last test accuracy in NAME's log (dtrun prefixes "[worker 0] ").
accuracy() { sed -n 's/.*test_accuracy=\([0-9.]*\)$/\1/p' "$work/$1.log" | tail -n 1; }
# says NAME PATTERN: the start line matches.
says() { grep -q "$2" "$work/$1.log" || { echo "FAIL: $1's start line does not say '$2'"; exit 1; }; }
# reaches NAME: within TOLERANCE below the CPU run, or above it.
reaches() {
  local a
  a=$(accuracy "$1")
  [ -n "$a" ] || { echo "FAIL: $1 printed no test_accuracy"; exit 1; }
  awk -v a="$a" -v c="$(accuracy cpu)" -v t="$tolerance" 'BEGIN { exit !(a >= c - t) }' ||
    { echo "FAIL: $1 reached test_accuracy=$a, more than $tolerance below the CPU run's $(accuracy cpu)"; exit 1; }
  results+=("$1 $a")
}
results=()
dtrun_job() { "$dtrun" --timeout 600 "$@"; }

run cpu "$fashion" "${recipe[@]}" --batch-size 128
says cpu 'contexts cpu'
[ -n "$(accuracy cpu)" ] || { echo "FAIL: the CPU run printed no test_accuracy"; exit 1; }

for store in device nccl; do
  run "$store" "$fashion" "${recipe[@]}" --batch-size 128 --gpus "$replica_gpus" --kvstore "$store"
  says "$store" "kvstore $store, .*contexts gpu(0),gpu("
  reaches "$store"
done

for store in dist_sync_device dist_async_device; do
  run "$store" dtrun_job -n 2 -s 1 -- "$fashion" "${recipe[@]}" --batch-size 64 --gpus "$worker_gpus" --kvstore "$store"
  says "$store" "2 worker(s) x batch 64, .*kvstore $store, .*contexts gpu(0)"
  reaches "$store"
done

run allreduce dtrun_job -n 2 -s 0 -- "$fashion" "${recipe[@]}" --batch-size 64 --gpus "$worker_gpus" --kvstore allreduce
says allreduce "2 worker(s) x batch 64, .*kvstore allreduce, .*contexts gpu(0)"
reaches allreduce

run dist_nccl dtrun_job -n 1 -s 0 -- "$fashion" "${recipe[@]}" --batch-size 128 --gpus local --kvstore dist_nccl
says dist_nccl "1 worker(s) x batch 128, .*kvstore dist_nccl, .*contexts gpu(0)"
reaches dist_nccl
if [ "$gpus" -ge 2 ]; then
  run dist_nccl_2 dtrun_job -n 2 -s 0 -- "$fashion" "${recipe[@]}" --batch-size 64 --gpus local --kvstore dist_nccl
  says dist_nccl_2 "2 worker(s) x batch 64, .*kvstore dist_nccl, .*contexts gpu(0)"
  reaches dist_nccl_2
fi

echo "OK: $gpus GPU(s), LeNet $epochs epoch(s), global batch 128; CPU $(accuracy cpu); within $tolerance of it:" \
  "$(printf '%s; ' "${results[@]}")"
