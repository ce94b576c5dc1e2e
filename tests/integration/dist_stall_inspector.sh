#!/bin/bash
# Issue 40, items 2 and 3: the stall inspector and dtrun's live job summary,
# on one dist_sync job (1 server, 2 workers, the example's MLP) that dtrun
# runs with --status-every 1, DT_STALL_WARNING_S=2 and a heartbeat timeout
# of 60 s.
#
# Once worker 1 has taken steps (dtrun's status line says so), it is
# stopped with SIGSTOP. Within 20 s the server's log must name it
# ("stall inspector: waiting ... for workers {1}"), the scheduler's too (the
# server tells it with its heartbeats) and worker 0's, which learns it from
# the scheduler's heartbeat replies. Then SIGCONT: the server and worker 0
# must log "resumed", and the job must finish cleanly. dtrun must have
# printed status lines naming both workers and the server, and the table
# per process: a row per worker and one for the server, whose compute,
# communication and waiting are non-negative and add up to its wall time,
# itself no longer than the job.
#
#   dist_stall_inspector.sh DTRUN EXAMPLE
set -euo pipefail
dtrun="$1" example="$2"
source "$(dirname "$0")/lib/stalled_job.sh" dt-stall

started=$(date +%s.%N)
stop_worker_1 "$dtrun" "$example" 2 1 dist_sync
named='stall inspector: waiting since .* for workers \{1\}'
wait_for "$logs/server-0.log" "$named" 20 || fail "the server did not name worker 1"
wait_for "$logs/scheduler.log" "$named" 20 || fail "the scheduler did not name worker 1"
wait_for "$logs/worker-0.log" "$named" 20 || fail "worker 0 did not name worker 1"
echo "named within $(( $(date +%s) - stopped )) s:"
grep -h "stall inspector" "$logs/server-0.log" "$logs/scheduler.log" "$logs/worker-0.log"
kill -CONT "$victim"
victim=""
wait_for "$logs/server-0.log" "stall inspector: resumed" 20 || fail "the server did not log that it resumed"
wait_for "$logs/worker-0.log" "stall inspector: resumed" 20 || fail "worker 0 did not log that it resumed"
grep -h "stall inspector: resumed" "$logs/server-0.log" "$logs/worker-0.log"

status=0
wait "$job_pid" || status=$?
job_pid=""
[ "$status" -eq 0 ] || fail "the job failed (dtrun exit $status)"
lasted=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
grep -Eq "^dtrun status at .*worker 0 step .*worker 1 step .*slowest worker" "$out" ||
  fail "no status line naming both workers"
grep -q "^dtrun summary per process" "$out" || fail "no table per process at the end"
grep -Eq "^worker 0 +[0-9]+" "$out" && grep -Eq "^worker 1 +[0-9]+" "$out" || fail "the table lacks a worker"
grep -Eq "^dtrun status at .*; server 0 [0-9.]+ req/s [0-9]+% busy" "$out" || fail "no status line naming the server"
# server 0  REQUESTS - COMPUTE COMMUNICATE WAITING WALL SENT_MB RECEIVED_MB
row=$(grep -E "^server 0 +[0-9]+ +- " "$out") || fail "the table has no row for the server"
echo "$row" | awk -v lasted="$lasted" '{
  requests = $3; compute = $5; communicate = $6; waiting = $7; wall = $8; sent = $9; received = $10
  if (requests <= 0 || compute < 0 || communicate < 0 || waiting < 0 || sent <= 0 || received <= 0) exit 1
  # each is rounded to 1 ms
  if (compute + communicate + waiting > wall + 0.005 || compute + communicate + waiting < wall - 0.005) exit 1
  if (compute + communicate <= 0 || wall > lasted) exit 1
}' || fail "implausible server row (the job lasted $lasted s): $row"
grep -E "^dtrun status at" "$out" | tail -2
sed -n '/^dtrun summary per process/,/^server 0 /p' "$out"
echo "OK: the stopped worker was named by the server, the scheduler and worker 0; the job finished"
