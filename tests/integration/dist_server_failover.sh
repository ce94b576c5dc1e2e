#!/bin/bash
# Issue 19, item 1: with replicated servers (dtrun --server-replication 1), a
# dist_sync job that loses a server to kill -9 goes on without restarting, on
# the replicas of the lost server's key parts, and ends with the same
# weights, bit for bit, as a job without replication that lost nothing. dtrun
# runs the example (MLP, SGD with momentum on the servers, 2 servers,
# 2 workers, 3 epochs).
#
#   dist_server_failover.sh DTRUN EXAMPLE           kill -9 server 0 in
#                                                   epoch 2
#   dist_server_failover.sh DTRUN EXAMPLE SEED...   per seed, kill -9 of a
#                                                   server drawn from both, at a
#                                                   time after training started
#                                                   drawn from 5-75% of the
#                                                   uninterrupted job's time
#   DT_FAILOVER_SERVERS=3 dist_server_failover.sh DTRUN EXAMPLE
#                                                   3 servers: kill -9 server 1
#                                                   in epoch 2, and once the
#                                                   scheduler says its parts'
#                                                   new copies are filled, its
#                                                   neighbour server 2 too: the
#                                                   job ends on server 0 alone,
#                                                   bit-identical
#   DT_FAILOVER_REJOIN=1 dist_server_failover.sh DTRUN EXAMPLE
#                                                   2 servers, dtrun
#                                                   --max-restarts 1: kill -9
#                                                   one server in epoch 2;
#                                                   dtrun starts it again, it
#                                                   rejoins as a replica, and
#                                                   once its new copies are
#                                                   filled the other server is
#                                                   killed: the job ends on the
#                                                   rejoined one, bit-identical
#   DT_FAILOVER_REJOIN=1 dist_server_failover.sh DTRUN EXAMPLE SEED...
#                                                   per seed, a drawn server
#                                                   killed at a drawn time,
#                                                   started again by dtrun, and
#                                                   once it has rejoined with
#                                                   its copies filled, the
#                                                   other server after a drawn
#                                                   delay
#   DT_FAILOVER_SERVERS=3 dist_server_failover.sh DTRUN EXAMPLE SEED...
#                                                   per seed, two drawn servers
#                                                   one after the other at drawn
#                                                   times, the second once the
#                                                   first's new copies are filled
#
# The seed fixes the victim and the delay's fraction (printed, so that a
# failure can be replayed); where in training the delay lands still depends on
# the machine's speed. The clock starts when worker 0 says it trains: a server
# lost before the job's node table is published ends the job (nobody can wait
# for a node that never joined), replicated or not.
set -euo pipefail
source "$(dirname "$0")/lib/job_processes.sh"
dtrun="$1" example="$2"
shift 2
work=$(mktemp -d "${TMPDIR:-/tmp}/dt-failover.XXXXXX")
trap 'rm -rf "$work"' EXIT
export OMP_WAIT_POLICY=passive
epochs=3
servers="${DT_FAILOVER_SERVERS:-2}"
rejoin="${DT_FAILOVER_REJOIN:-0}"
restarts=()
[ "$rejoin" = 1 ] && restarts=(--max-restarts 1)
job_args=(--model mlp --kvstore dist_sync --batch-size 64 --threads 1 --lr 0.05 --momentum 0.9 --epochs "$epochs")
# Every process of a job run by this script carries its tag, so that the
# victim is found among its processes only (other jobs may run here).
tag="dt-failover-$$-$RANDOM"

# Starts the replicated job in the background; sets job_pid.
start_job() {
  "$dtrun" -n 2 -s "$servers" --timeout 600 --server-replication 1 "${restarts[@]}" --env "DT_JOB_TAG=$tag" -- \
    "$example" "${job_args[@]}" \
    --checkpoint "$work/failover.safetensors" > "$work/failover.log" 2>&1 &
  job_pid=$!
}

# Waits until worker 0 says it trains (the job has started) and the job's
# server RANK runs; false when the job ends first.
wait_for_training() {
  local i
  for i in $(seq 600); do
    kill -0 "$job_pid" 2>/dev/null || return 1
    grep -qs "\[worker 0\] training " "$work/failover.log" && [ -n "$(job_process "$tag" server "$1" 0)" ] && return 0
    sleep 0.1
  done
  echo "FAIL: the job did not start training within 60 s"
  exit 1
}

# After the job: exit 0 without a restart, the loss reported, the weights.
# Where every process of the job is, for a job that runs far longer than
# the uninterrupted one: each thread's stack (gdb, when installed), else
# what each thread waits in.
dump_stacks() {
  local p role
  for p in /proc/[0-9]*; do
    tr '\0' '\n' 2>/dev/null < "$p/environ" | grep -qx "DT_JOB_TAG=$tag" || continue
    role=$(tr '\0' '\n' < "$p/environ" | grep "^DMLC_ROLE=\|^DMLC_WORKER_ID=" | tr '\n' ' ')
    echo "== pid ${p#/proc/}: $role$(tr '\0' ' ' < "$p/cmdline" | cut -c1-80)"
    if command -v gdb > /dev/null; then
      timeout 30 gdb -p "${p#/proc/}" -batch -ex "thread apply all bt 15" 2>&1 | grep "^Thread\|^#"
    else
      cat "$p"/task/*/wchan 2>/dev/null | tr '\0' '\n' | sort | uniq -c
    fi
  done > "$work/stacks.txt" 2>&1
}

check_job() {
  local server=$1 what=$2 rc=0 waited=0
  # Stacks are taken once the job has run 120 s, or 6 times the
  # uninterrupted job, longer than it should (dtrun's --timeout ends it).
  local stacks_after=$((straight_tenths * 6 / 10))
  [ "$stacks_after" -ge 120 ] || stacks_after=120
  while kill -0 "$job_pid" 2>/dev/null; do
    sleep 1
    waited=$((waited + 1))
    [ "$waited" -eq "$stacks_after" ] && dump_stacks
  done
  wait "$job_pid" || rc=$?
  if [ "$rc" -ne 0 ]; then
    # What dtrun, the scheduler and the servers said (every line: a server
    # started again speaks only there), then the log's end.
    echo "FAIL ($what): dtrun exited $rc"
    grep "^dtrun\|^\[scheduler\]\|^\[server" "$work/failover.log" | tail -60
    echo "..."
    tail -15 "$work/failover.log"
    [ -s "$work/stacks.txt" ] && { echo "... where the job's processes were after $stacks_after s:"; cat "$work/stacks.txt"; }
    exit 1
  fi
  grep -q "server $server killed by signal 9" "$work/failover.log" ||
    { echo "FAIL ($what): dtrun did not report server $server killed"; grep "^dtrun:" "$work/failover.log"; exit 1; }
  grep -q "the job goes on with $((servers - 1)) of $servers servers" "$work/failover.log" ||
    { echo "FAIL ($what): the scheduler did not go on without the server"; tail -30 "$work/failover.log"; exit 1; }
  grep -q "\[worker 0\] epoch $epochs/$epochs:" "$work/failover.log" ||
    { echo "FAIL ($what): worker 0 did not train epoch $epochs"; tail -30 "$work/failover.log"; exit 1; }
  cmp -s "$work/straight.safetensors" "$work/failover.safetensors" ||
    { echo "FAIL ($what): the weights differ from the uninterrupted job's"; grep "disttrain\|^dtrun" "$work/failover.log"; exit 1; }
}

started=$(date +%s%N)
"$dtrun" -n 2 -s "$servers" --timeout 300 -- "$example" "${job_args[@]}" --checkpoint "$work/straight.safetensors" \
  > "$work/straight.log" 2>&1 || { echo "FAIL: the uninterrupted job failed"; tail -20 "$work/straight.log"; exit 1; }
straight_tenths=$(( ($(date +%s%N) - started) / 100000000 ))

if [ $# -eq 0 ]; then
  start_job
  wait_for_training 0 || { echo "FAIL: the job ended before it started"; tail "$work/failover.log"; exit 1; }
  for i in $(seq 1200); do
    grep -qs "\[worker 0\] epoch 1/$epochs:" "$work/failover.log" && break
    kill -0 "$job_pid" 2>/dev/null || break
    sleep 0.1
  done
  grep -qs "\[worker 0\] epoch 1/$epochs:" "$work/failover.log" || { echo "FAIL: epoch 1 did not end"; exit 1; }
  sleep 0.3  # into epoch 2: rounds in flight
  first=0
  [ "$servers" -eq 3 ] && first=1
  pid=$(job_process "$tag" server "$first" 0)
  [ -n "$pid" ] || { echo "FAIL: server $first was not running in epoch 2"; exit 1; }
  # Servers are told apart by the order of their pids, among those running.
  [ "$servers" -eq 3 ] && neighbour=$(job_process "$tag" server 2 0)
  # The other original server, found now: pids may wrap, so the restarted
  # server's is not always the larger.
  [ "$rejoin" = 1 ] && other=$(job_process "$tag" server 1 0)
  kill -9 "$pid"
  if [ "$rejoin" = 1 ]; then
    # dtrun starts server 0 again; it rejoins in its place and takes new
    # copies of every part. Once they are filled, the other original server
    # may go too.
    for i in $(seq 300); do
      grep -qs "have two holders again after 1 server loss(es) and 1 rejoin(s)" "$work/failover.log" && break
      kill -0 "$job_pid" 2>/dev/null || break
      sleep 0.1
    done
    grep -qs "have two holders again after 1 server loss(es) and 1 rejoin(s)" "$work/failover.log" ||
      { echo "FAIL: the rejoined server's copies were not reported filled"; grep "disttrain\|^dtrun" "$work/failover.log"; exit 1; }
    kill -0 "$other" 2>/dev/null || { echo "FAIL: the other server was not running"; exit 1; }
    kill -9 "$other"
    check_job 0 "server 0 killed, started again, then the other server killed"
    grep -q "server 0 killed by signal 9 (Killed); starting it again to rejoin the running job as a replica" \
      "$work/failover.log" && grep -q "server 1 killed by signal 9" "$work/failover.log" ||
      { echo "FAIL: dtrun did not restart server 0 and report server 1 killed"; grep "^dtrun" "$work/failover.log"; exit 1; }
    echo "OK: server 0 killed in epoch 2 and started again by dtrun; it rejoined as a replica, and once its copies" \
      "were filled the other server was killed: the job ended on the rejoined server, bit-identical to the" \
      "uninterrupted job without replication"
    exit 0
  fi
  if [ "$servers" -eq 3 ]; then
    # Server 1's parts get new copies on 2 and 0; once they are filled,
    # server 2 may go too, though it was next to server 1.
    for i in $(seq 300); do
      grep -qs "have two holders again after the loss of 1 server" "$work/failover.log" && break
      kill -0 "$job_pid" 2>/dev/null || break
      sleep 0.1
    done
    grep -qs "have two holders again after the loss of 1 server" "$work/failover.log" ||
      { echo "FAIL: the new copies were not reported filled"; grep "disttrain\|^dtrun" "$work/failover.log"; exit 1; }
    kill -0 "$neighbour" 2>/dev/null || { echo "FAIL: server 2 was not running after the first loss"; exit 1; }
    kill -9 "$neighbour"
    check_job 1 "servers 1 and 2 killed one after the other"
    grep -q "server 2 killed by signal 9" "$work/failover.log" &&
      grep -q "the job goes on with 1 of 3 servers" "$work/failover.log" ||
      { echo "FAIL: the job did not go on without server 2"; grep "disttrain\|^dtrun" "$work/failover.log"; exit 1; }
    echo "OK: servers 1 and 2 killed one after the other; the job went on with the new copies on server 0 and" \
      "ended bit-identical to the uninterrupted job without replication"
    exit 0
  fi
  check_job 0 "server 0 killed in epoch 2"
  echo "OK: server 0 killed in epoch 2; the job went on with server 1's replicas and ended bit-identical to" \
    "the uninterrupted job without replication"
  exit 0
fi

# Per seed: starts the job of COUNT servers, kills server FIRST DELAY tenths
# of a second into training and, once the log says TEXT (30 s at most),
# server SECOND after SECOND_DELAY more. Sets second_killed (yes or no);
# returns 1, having said so, when the first kill came after the job ended.
kill_one_then_another() {
  local seed=$1 first=$2 second=$3 delay=$4 second_delay=$5 count=$6 text=$7 pids=() i
  start_job
  wait_for_training "$first" || { echo "FAIL: seed $seed: the job ended before it started"; tail -20 "$work/failover.log"; exit 1; }
  for i in $(seq 0 $((count - 1))); do pids+=("$(job_process "$tag" server "$i" 0)"); done
  sleep "$((delay / 10)).$((delay % 10))"
  if ! kill -9 "${pids[$first]}" 2>/dev/null; then
    wait "$job_pid" || true
    echo "OK: seed $seed: server $first@$delay came too late (the job had ended)"
    return 1
  fi
  for i in $(seq 300); do
    grep -qs "$text" "$work/failover.log" && break
    kill -0 "$job_pid" 2>/dev/null || break
    sleep 0.1
  done
  sleep "$((second_delay / 10)).$((second_delay % 10))"
  second_killed=no
  if grep -qs "$text" "$work/failover.log" && kill -9 "${pids[$second]}" 2>/dev/null; then
    second_killed=yes
  fi
}

# 3 servers, per seed: a drawn server killed at a drawn time (5-50% of the
# uninterrupted job's), and once the scheduler says its parts' new copies
# are filled, another drawn server after a further drawn delay (0-30%).
three_server_seed() {
  local seed=$1 first second delay second_delay
  RANDOM=$seed
  first=$((RANDOM % 3))
  second=$(( (first + 1 + RANDOM % 2) % 3 ))
  delay=$((straight_tenths * (5 + RANDOM % 46) / 100))
  second_delay=$((straight_tenths * (RANDOM % 31) / 100))
  kill_one_then_another "$seed" "$first" "$second" "$delay" "$second_delay" 3 \
    "have two holders again after the loss of 1 server" || return 0
  check_job "$first" "seed $seed: server $first@$delay, then server $second"
  if [ "$second_killed" = yes ] && ! grep -q "the job goes on with 1 of 3 servers" "$work/failover.log"; then
    # Killed as the job was ending: dtrun and the scheduler may not have
    # seen it as a loss; the weights were checked all the same.
    echo "OK: seed $seed: server $first killed $delay tenths in, server $second as the job ended; bit-identical"
    return
  fi
  echo "OK: seed $seed: server $first killed $delay tenths of a second into training, server $second" \
    "$([ "$second_killed" = yes ] && echo "$second_delay tenths after its new copies were filled" || echo "not (the job had ended)")" \
    "(the uninterrupted job took $straight_tenths); bit-identical"
}

# 2 servers under dtrun --max-restarts 1, per seed: a drawn server killed at
# a drawn time (5-45% of the uninterrupted job's), started again by dtrun;
# once the scheduler says its copies are filled, the other original server
# after a further drawn delay (0-20%).
rejoin_seed() {
  local seed=$1 first delay second_delay
  RANDOM=$seed
  first=$((RANDOM % 2))
  delay=$((straight_tenths * (5 + RANDOM % 41) / 100))
  second_delay=$((straight_tenths * (RANDOM % 21) / 100))
  kill_one_then_another "$seed" "$first" "$((1 - first))" "$delay" "$second_delay" 2 "and 1 rejoin(s)" || return 0
  check_job "$first" "seed $seed: server $first@$delay, started again, then server $((1 - first))"
  grep -q "server $first killed by signal 9 (Killed); starting it again" "$work/failover.log" ||
    { echo "FAIL: seed $seed: dtrun did not start server $first again"; grep "^dtrun" "$work/failover.log"; exit 1; }
  echo "OK: seed $seed: server $first killed $delay tenths of a second into training and started again;" \
    "server $((1 - first)) $([ "$second_killed" = yes ] && echo "killed $second_delay tenths after the rejoined" \
    "server's copies were filled" || echo "not (the job had ended)") (the uninterrupted job took" \
    "$straight_tenths); bit-identical"
}

for seed in "$@"; do
  if [ "$rejoin" = 1 ]; then
    rejoin_seed "$seed"
    continue
  fi
  if [ "$servers" -eq 3 ]; then
    three_server_seed "$seed"
    continue
  fi
  RANDOM=$seed
  victim=$((RANDOM % 2))
  delay=$((straight_tenths * (5 + RANDOM % 71) / 100))  # tenths of a second
  start_job
  wait_for_training "$victim" || { echo "FAIL: seed $seed: the job ended before it started"; tail -20 "$work/failover.log"; exit 1; }
  sleep "$((delay / 10)).$((delay % 10))"
  pid=$(job_process "$tag" server "$victim" 0)
  if [ -z "$pid" ]; then
    # Drawn after the job's servers were told to stop: no kill to check.
    wait "$job_pid" || true
    echo "OK: seed $seed: server $victim@$delay came too late (the job had ended)"
    continue
  fi
  kill -9 "$pid"
  check_job "$victim" "seed $seed: server $victim@$delay"
  echo "OK: seed $seed: server $victim killed $delay tenths of a second into training (the uninterrupted job" \
    "took $straight_tenths); bit-identical"
done
