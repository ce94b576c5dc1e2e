#!/bin/bash
# A real parameter-server job on this machine: dt-node as scheduler (port 0,
# reported through a file) and SERVERS servers, and WORKERS copies of
# examples/c/train_fashion_mnist as workers, all on tcp loopback. Passes when
# every process exits 0 and worker 0's final test accuracy reaches MIN.
#
#   dist_train_fashion_mnist.sh DT_NODE EXAMPLE KVSTORE EPOCHS MIN [SERVERS WORKERS BATCH] [-- extra example args]
set -euo pipefail
dt_node="$1" example="$2" kvstore="$3" epochs="$4" min="$5"
servers="${6:-2}" workers="${7:-2}" batch="${8:-32}"
shift $(( $# < 8 ? $# : 8 ))
[ "${1:-}" = "--" ] && shift
work=$(mktemp -d "${TMPDIR:-/tmp}/dt-dist-train.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# Five processes share the cores: OpenMP threads must not spin (see docs/launching.md).
export OMP_WAIT_POLICY=passive
export DMLC_NUM_SERVER="$servers" DMLC_NUM_WORKER="$workers" DMLC_PS_ROOT_URI=127.0.0.1
export DT_STARTUP_TIMEOUT_S=60 DT_HEARTBEAT_INTERVAL_S=0.5 DT_HEARTBEAT_TIMEOUT_S=10

DMLC_ROLE=scheduler DMLC_PS_ROOT_PORT=0 DT_PS_PORT_FILE="$work/port" "$dt_node" > "$work/scheduler.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 200); do [ -s "$work/port" ] && break; sleep 0.05; done
[ -s "$work/port" ] || { echo "FAIL: the scheduler did not report its port"; cat "$work/scheduler.log"; exit 1; }
export DMLC_PS_ROOT_PORT=$(cat "$work/port")

for s in $(seq 0 $((servers - 1))); do
  DMLC_ROLE=server "$dt_node" > "$work/server$s.log" 2>&1 &
  pids+=($!)
done
for w in $(seq 0 $((workers - 1))); do
  DMLC_ROLE=worker DMLC_WORKER_ID=$w "$example" --kvstore "$kvstore" --epochs "$epochs" --batch-size "$batch" \
    --threads 1 "$@" > "$work/worker$w.log" 2>&1 &
  pids+=($!)
done

# Every process must end by itself; the budget grows with the epochs.
deadline=$(( $(date +%s) + 120 + 240 * epochs ))
status=0
for p in "${pids[@]}"; do
  while kill -0 "$p" 2>/dev/null; do
    if [ "$(date +%s)" -ge "$deadline" ]; then echo "FAIL: the job did not finish in time"; status=1; break 2; fi
    sleep 0.2
  done
  wait "$p" || status=1
done
for f in "$work"/*.log; do echo "== $(basename "$f")"; cat "$f"; done
[ $status -eq 0 ] || { echo "FAIL: a process of the job failed"; exit 1; }
accuracy=$(sed -n 's/^test_accuracy=//p' "$work/worker0.log")
awk -v a="$accuracy" -v m="$min" 'BEGIN { exit !(a >= m) }' || { echo "FAIL: test_accuracy=$accuracy < $min"; exit 1; }
echo "OK: $kvstore, $workers workers x batch $batch, $epochs epoch(s): test_accuracy=$accuracy"
