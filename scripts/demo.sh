#!/usr/bin/env bash
# The main job: installs what is missing, builds, and trains LeNet on
# Fashion-MNIST (/usr/share/datasets/fashion-mnist) for 5 epochs through the
# C API, printing per-epoch progress and ending with test_accuracy=<fraction>.
# Extra arguments go to the example, e.g. scripts/demo.sh --epochs 1.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
BUILD_DIR=build scripts/build.sh >/dev/null
out_dir="${DT_DEMO_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/disttrain-demo.XXXXXX")}"
echo "demo: metrics and checkpoint go to $out_dir"
build/examples/train_fashion_mnist --model lenet --epochs 5 --batch-size 64 --lr 0.02 --momentum 0.9 \
  --kvstore local --metrics "$out_dir/metrics.jsonl" --checkpoint "$out_dir/lenet.safetensors" "$@"
