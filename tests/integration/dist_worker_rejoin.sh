#!/bin/bash
# Issue 19, item 3: a worker killed in a running dist_sync job and started
# again by `dtrun --worker-loss continue --max-restarts 1` joins the running
# job in its old place: the others never stop, it takes the servers' weights
# and optimizer state and goes on from the step the job is at, and the job
# finishes. dtrun runs the example (MLP, SGD with momentum on the servers,
# 2 servers, 2 workers, 3 epochs); worker 1 is killed with kill -9 in epoch 2.
#
#   dist_worker_rejoin.sh DTRUN EXAMPLE
#
# The weights cannot be the uninterrupted job's: the rounds without worker 1
# summed one gradient, not two (worker_loss_test checks a rejoined worker's
# rounds exactly).
set -euo pipefail
source "$(dirname "$0")/lib/job_processes.sh"
dtrun="$1" example="$2"
work=$(mktemp -d "${TMPDIR:-/tmp}/dt-rejoin.XXXXXX")
trap 'rm -rf "$work"' EXIT
export OMP_WAIT_POLICY=passive
epochs=3
tag="dt-rejoin-$$-$RANDOM"
log="$work/rejoin.log"

"$dtrun" -n 2 -s 2 --timeout 600 --worker-loss continue --max-restarts 1 --env "DT_JOB_TAG=$tag" -- \
  "$example" --model mlp --kvstore dist_sync --batch-size 64 --threads 1 --lr 0.05 --momentum 0.9 \
  --epochs "$epochs" --metrics "$work/metrics.jsonl" > "$log" 2>&1 &
job_pid=$!

fail() { echo "FAIL: $1"; grep "disttrain\|^dtrun\|epoch" "$log" | tail -40; exit 1; }

for i in $(seq 1200); do
  grep -qs "\[worker 0\] epoch 1/$epochs:" "$log" && break
  kill -0 "$job_pid" 2>/dev/null || break
  sleep 0.1
done
grep -qs "\[worker 0\] epoch 1/$epochs:" "$log" || fail "epoch 1 did not end"
sleep 0.3  # into epoch 2: rounds in flight
pid=$(job_process "$tag" worker 1 0)
[ -n "$pid" ] || fail "worker 1 was not running in epoch 2"
kill -9 "$pid"

rc=0
wait "$job_pid" || rc=$?
[ "$rc" -eq 0 ] || fail "dtrun exited $rc"
grep -q "worker 1 killed by signal 9" "$log" || fail "dtrun did not report worker 1 killed"
grep -q "starting it again to rejoin the running job" "$log" || fail "dtrun did not start worker 1 again"
grep -q "joined the running job in the place of worker 1" "$log" || fail "the scheduler did not take worker 1 back"
grep -q "\[worker 1\].*joined the running job at epoch" "$log" || fail "the trainer did not go on from the job's step"
# Worker 1 logs its epochs beside worker 0's; the rejoined one goes on in its
# predecessor's file.
grep -q "\"epoch\": *$epochs\b" "$work/metrics-worker1.jsonl" ||
  fail "the rejoined worker 1 did not train epoch $epochs: $(cat "$work/metrics-worker1.jsonl")"
grep -q "\[worker 0\] epoch $epochs/$epochs:" "$log" || fail "worker 0 did not train epoch $epochs"
grep -q "\[worker 0\] epoch 2/$epochs:" "$log" || fail "worker 0 did not train epoch 2"
echo "OK: worker 1 killed in epoch 2, started again by dtrun, joined the running job: $(
  grep -o "joined the running job at epoch [0-9]*, batch [0-9]*" "$log" | head -1); the job finished"
