#!/bin/bash
# Issue 40, item 2 for the all-reduce store: an allreduce job (N workers,
# 2 or 3, no servers, the example's MLP) under dtrun with
# DT_STALL_WARNING_S=2 and a heartbeat timeout of 60 s.
#
# Once worker 1 has taken steps, it is stopped with SIGSTOP. Within 20 s
# every other worker must name it in its log ("stall inspector: waiting
# since ... for workers {1}: receive from (or send to) worker W in ...
# all-reduce call N ..."), and the scheduler too (the workers tell it whom
# they wait for with their heartbeats). With 3 workers, worker 0 in the ring
# waits on worker 2 (which only waits on worker 1) or on its send to worker
# 1; either way it names worker 1, from the scheduler's news in the first
# case. Then SIGCONT: the others must log "resumed", and the job must
# finish cleanly.
#
#   dist_stall_inspector_allreduce.sh DTRUN EXAMPLE [N]
set -euo pipefail
source "$(dirname "$0")/lib/job_processes.sh"
dtrun="$1" example="$2" workers="${3:-2}"
others=(0)
[ "$workers" -eq 3 ] && others=(0 2)
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

"$dtrun" -n "$workers" -s 0 --log-dir "$logs" --status-every 1 --timeout 110 \
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
for w in "${others[@]}"; do
  wait_for "$logs/worker-$w.log" "$named: (receive from|send to) worker [0-9]+ in .*all-reduce call [0-9]+" 20 ||
    fail "worker $w did not name worker 1 and the all-reduce call"
done
wait_for "$logs/scheduler.log" "$named: worker [0-9]'s all-reduce waits for workers \{1\}" 20 ||
  fail "the scheduler did not name worker 1"
echo "named within $(( $(date +%s) - stopped )) s:"
for w in "${others[@]}"; do grep -h "stall inspector" "$logs/worker-$w.log"; done
grep -h "stall inspector" "$logs/scheduler.log"
kill -CONT "$victim"
victim=""
for w in "${others[@]}"; do
  wait_for "$logs/worker-$w.log" "stall inspector: resumed" 20 || fail "worker $w did not log that it resumed"
  grep -h "stall inspector: resumed" "$logs/worker-$w.log"
done

status=0
wait "$job_pid" || status=$?
job_pid=""
[ "$status" -eq 0 ] || fail "the job failed (dtrun exit $status)"
echo "OK: the stopped worker was named by workers ${others[*]} and the scheduler, which resumed; the job finished"
