#!/bin/bash
# MXNet's default gradient compression learns (issue 42): the 2-worker
# dist_sync example with `--compression 1bit` and with `2bit` (threshold 0.5,
# on the scale of one sample's gradient) ends within its gap of the same job
# run uncompressed, here in the same test, and says nothing of a growing
# residual. Each job runs through dist_train_fashion_mnist.sh (a real job on
# tcp loopback, every process must exit 0).
#
# The gap: 1.5 points for both, as issue 42 asks. 2bit runs in its default
# form (magnitude=mean: what crosses the threshold goes as +-the mean of what
# crossed); in MXNet's form (+-threshold) no single threshold came within 2
# points at 2 epochs (LeNet, batch 64: raw thresholds 2, 4, 8, 16, 32 ended
# 4.0, 3.6, 2.0, 3.0, 4.4 points below; the large layer's gradients are ~50x
# smaller than the small ones', so a threshold that keeps the small layers'
# residuals bounded sends the large layer rarely).
#
#   dist_compression_learns.sh DT_NODE EXAMPLE [EPOCHS BATCH]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dt_node="$1" example="$2"
epochs="${3:-2}" batch="${4:-64}"

accuracy_of() {  # SPEC: runs the job, prints its test accuracy
  local spec="$1" out
  local args=()
  [ "$spec" = none ] || args=(--compression "$spec")
  if ! out=$("$here/dist_train_fashion_mnist.sh" "$dt_node" "$example" dist_sync "$epochs" 0 2 2 "$batch" \
      -- "${args[@]}" 2>&1); then
    echo "FAIL: the job with compression $spec failed:" >&2
    echo "$out" >&2
    return 1
  fi
  if grep -q "residual keeps growing" <<< "$out"; then
    echo "FAIL: compression $spec warned of a growing residual:" >&2
    grep "residual keeps growing" <<< "$out" >&2
    return 1
  fi
  sed -n 's/^OK: .*test_accuracy=//p' <<< "$out"
}

baseline=$(accuracy_of none)
echo "uncompressed: test_accuracy=$baseline"
status=0
for spec_gap in 1bit:0.015 2bit:0.015; do
  spec="${spec_gap%%:*}" max_gap="${spec_gap#*:}"
  got=$(accuracy_of "$spec")
  echo "$spec: test_accuracy=$got (uncompressed $baseline)"
  if ! awk -v a="$got" -v b="$baseline" -v gap="$max_gap" 'BEGIN { exit !(a >= b - gap) }'; then
    echo "FAIL: $spec ends at $got, more than $max_gap below the uncompressed $baseline"
    status=1
  fi
done
[ $status -eq 0 ] && echo "OK: 1bit and 2bit within their gaps of the uncompressed run ($epochs epochs, 2 workers x batch $batch)"
exit $status
