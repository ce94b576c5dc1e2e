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
dtrun="$1" example="$2" workers="${3:-2}"
others=(0)
[ "$workers" -eq 3 ] && others=(0 2)
source "$(dirname "$0")/lib/stalled_job.sh" dt-stall-ar

stop_worker_1 "$dtrun" "$example" "$workers" 0 allreduce
named='stall inspector: waiting since .* for workers \{1\}'
for w in "${others[@]}"; do
  wait_for "$logs/worker-$w.log" "$named: (receive from|send to) worker [0-9]+ in .*all-reduce call [0-9]+" 20 ||
    fail "worker $w did not name worker 1 and the all-reduce call"
done
wait_for "$logs/scheduler.log" "$named: .*worker [0-9]'s all-reduce waits for workers \{1\}" 20 ||
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
