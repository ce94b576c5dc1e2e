#!/bin/bash
# Issue 40, item 2 for the all-reduce store: an allreduce job (2 workers, no
# servers, the example's MLP) under dtrun with DT_STALL_WARNING_S=2 and a
# heartbeat timeout of 60 s.
#
# Once worker 1 has taken steps, it is stopped with SIGSTOP. Within 20 s
# worker 0, blocked in a ring or recursive-doubling receive from it, must
# name it in its log ("stall inspector: waiting since ... for workers {1}:
# receive from worker 1 in ... all-reduce call N ..."), and the scheduler
# too (worker 0 tells it with its heartbeats). Then SIGCONT: worker 0 must
# log "resumed", and the job must finish cleanly.
#
#   dist_stall_inspector_allreduce.sh DTRUN EXAMPLE
set -euo pipefail
source "$(dirname "$0")/lib/job_processes.sh"
dtrun="$1" example="$2"
work=$(mktemp -d "${TMPDIR:-/tmp}/dt-stall-ar.XXXXXX")
tag="dt-stall-ar-$$-$RANDOM"
job_pid=""
victim=""
cleanup() {
  [ -n "$victim" ] && kill -CONT "$victim" 2>/dev/null || true
  [ -n "$job_pid" ] && kill "$job_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
export OMP_WAIT_POLICY=passive
out="$work/dtrun.log"
logs="$work/logs"

fail() {
  echo "FAIL: $1"
  for f in "$logs"/*.log; do echo "== $(basename "$f")"; grep -v "^epoch\|^\s*$" "$f" | tail -15; done
  echo "== dtrun"; tail -15 "$out"
  exit 1
}
# wait_for FILE PATTERN SECONDS: whether an extended regex shows up in time.
wait_for() {
  local i
  for i in $(seq $(( $3 * 10 ))); do
    grep -Eqs -- "$2" "$1" && return 0
    sleep 0.1
  done
  return 1
}

"$dtrun" -n 2 -s 0 --log-dir "$logs" --status-every 1 --timeout 110 \
  --env DT_JOB_TAG="$tag" --env DT_STALL_WARNING_S=2 --env DT_HEARTBEAT_INTERVAL_S=0.5 \
  --env DT_HEARTBEAT_TIMEOUT_S=60 \
  "$example" --model mlp --kvstore allreduce --batch-size 32 --threads 1 --epochs 1 > "$out" 2>&1 &
job_pid=$!

wait_for "$out" "worker 1 step [0-9]+" 40 || fail "no status line with a step of worker 1"
victim=$(job_process "$tag" worker 1 0)
[ -n "$victim" ] || fail "worker 1 is not running"
kill -STOP "$victim"
stopped=$(date +%s)
named='stall inspector: waiting since .* for workers \{1\}'
wait_for "$logs/worker-0.log" "$named: receive from worker 1 in .*all-reduce call [0-9]+" 20 ||
  fail "worker 0 did not name worker 1 and the all-reduce call"
wait_for "$logs/scheduler.log" "$named: worker 0's all-reduce waits for workers \{1\}" 20 ||
  fail "the scheduler did not name worker 1"
echo "named within $(( $(date +%s) - stopped )) s:"
grep -h "stall inspector" "$logs/worker-0.log" "$logs/scheduler.log"
kill -CONT "$victim"
victim=""
wait_for "$logs/worker-0.log" "stall inspector: resumed" 20 || fail "worker 0 did not log that it resumed"
grep -h "stall inspector: resumed" "$logs/worker-0.log"

status=0
wait "$job_pid" || status=$?
job_pid=""
[ "$status" -eq 0 ] || fail "the job failed (dtrun exit $status)"
echo "OK: the stopped worker was named by worker 0 and the scheduler; worker 0 resumed; the job finished"
