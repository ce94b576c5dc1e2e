#!/bin/sh
# The C examples on GPUs (label gpu): exits 77, which CTest reports as
# skipped, on a machine without one (the count from hello_ndarray).
#  - train_fashion_mnist LeNet --gpus 0, one epoch: test accuracy >= 0.80;
#    the same with --precision fp16 (dynamic loss scaling).
#  - the MLP --gpus 0,0 (two replicas on one GPU, the batch split, Gluon's
#    default kvstore "device" reducing and broadcasting) within 0.5 points
#    of --gpus 0 (the rate 0.01 as in example_train_fashion_mnist_cpus, tests/CMakeLists.txt); with two
#    GPUs or more, --gpus 0,1 too.
#  - train_image_classifier ResNet-18 --gpus 0 --precision bf16 on the
#    synthetic CIFAR-10 directory the CPU example test writes: one epoch,
#    a finite loss and a test accuracy.
#   train_gpus.sh HELLO_NDARRAY TRAIN_FASHION_MNIST TRAIN_IMAGE_CLASSIFIER
set -eu
hello="$1"
fashion="$2"
image="$3"
work=$(mktemp -d "${TMPDIR:-/tmp}/dt-gpu-examples.XXXXXX")
trap 'rm -rf "$work"' EXIT

gpus=$("$(dirname "$0")/visible_gpus.sh" "$hello") || { echo "FAIL: no GPU count"; exit 1; }
if [ "$gpus" -eq 0 ]; then
  echo "SKIPPED: no GPU visible"
  exit 77
fi

# run NAME ARGS...: trains, prints the log, leaves it in $work/NAME.log.
run() {
  name="$1"
  shift
  "$@" > "$work/$name.log" 2>&1 || { cat "$work/$name.log"; echo "FAIL: $name: $* exited $?"; exit 1; }
  cat "$work/$name.log"
}
accuracy() { sed -n 's/^test_accuracy=//p' "$work/$1.log"; }
# at_least NAME MIN
at_least() {
  awk -v a="$(accuracy "$1")" -v m="$2" 'BEGIN { exit !(a >= m) }' ||
    { echo "FAIL: $1 reached test_accuracy=$(accuracy "$1") < $2"; exit 1; }
}
# close NAME1 NAME2: within 0.5 points of each other.
close() {
  awk -v a="$(accuracy "$1")" -v b="$(accuracy "$2")" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.005) }' ||
    { echo "FAIL: $1 reached $(accuracy "$1"), $2 $(accuracy "$2"): more than 0.5 points apart"; exit 1; }
}
# says NAME PATTERN: the start line matches.
says() { grep -q "$2" "$work/$1.log" || { echo "FAIL: $1's start line does not say '$2'"; exit 1; }; }

run lenet "$fashion" --epochs 1 --gpus 0
says lenet 'kvstore local, .*contexts gpu(0), precision fp32$'
at_least lenet 0.80
run lenet_fp16 "$fashion" --epochs 1 --gpus 0 --precision fp16
says lenet_fp16 'contexts gpu(0), precision fp16$'
at_least lenet_fp16 0.80

run mlp "$fashion" --model mlp --epochs 1 --lr 0.01 --gpus 0
run mlp_two_replicas "$fashion" --model mlp --epochs 1 --lr 0.01 --gpus 0,0
says mlp_two_replicas 'kvstore device, .*contexts gpu(0),gpu(0), precision fp32$'
at_least mlp 0.80
close mlp mlp_two_replicas
if [ "$gpus" -ge 2 ]; then
  run mlp_two_gpus "$fashion" --model mlp --epochs 1 --lr 0.01 --gpus 0,1
  says mlp_two_gpus 'kvstore device, .*contexts gpu(0),gpu(1), precision fp32$'
  close mlp mlp_two_gpus
fi

python3 "$(dirname "$0")/write_synthetic_cifar.py" "$work"
run resnet_bf16 "$image" --data "$work" --model resnet18 --epochs 1 --batch-size 16 --gpus 0 --precision bf16 \
  --metrics "$work/metrics.jsonl"
says resnet_bf16 'contexts gpu(0), precision bf16$'
grep -q '^test_accuracy=' "$work/resnet_bf16.log" || { echo "FAIL: no test_accuracy from ResNet-18 in bf16"; exit 1; }
grep -q '"loss":[0-9]' "$work/metrics.jsonl" || { echo "FAIL: no finite loss in the bf16 metrics log"; exit 1; }
echo "OK: LeNet fp32 $(accuracy lenet), fp16 $(accuracy lenet_fp16); MLP gpu(0) $(accuracy mlp)," \
  "gpu(0),gpu(0) $(accuracy mlp_two_replicas); ResNet-18 bf16 trained"
