#!/bin/bash
# Issue 19, item 3: a worker killed in a running dist_sync job and started
# again by `dtrun --worker-loss continue --max-restarts N` joins the running
# job in its old place: the others never stop, it takes the servers' weights
# and optimizer state and goes on from the step the job is at, and the job
# finishes. dtrun runs the example (MLP, SGD with momentum on the servers,
# 2 servers, 2 workers, 3 epochs).
#
#   dist_worker_rejoin.sh DTRUN EXAMPLE           kill -9 worker 1 in epoch 2
#   dist_worker_rejoin.sh DTRUN EXAMPLE SEED...   per seed, one or two kill -9s,
#                                                 each of a worker drawn from
#                                                 both, at a time drawn from
#                                                 5-80% of the uninterrupted
#                                                 job's training time
#
# DT_REJOIN_DTRUN_ARGS: more dtrun options for the killed job (CTest runs it
# once with --server-replication 1: the worker joins both copies).
# DT_REJOIN_THEN_SERVERS=1 (without seeds; with --server-replication 1):
# once worker 1 has joined, server 1 is killed and started again by dtrun;
# once its new copies are filled, server 0 is killed. The rejoined server
# missed worker 1's Join: it takes the joined workers with the job's
# settings, so the job ends on it, worker 1's pushes taken.
#
# DT_REJOIN_STORE=allreduce: the same for a job without servers (-s 0,
# kvstore allreduce, SGD with momentum on the workers): the started worker
# waits until the one left lets it in before a batch and hands it its
# weights, optimizer state and step. Every worker writes a checkpoint
# directory, and each epoch the joined worker finished must have left a
# checkpoint byte-identical to worker 0's: the same weights, momentum and
# step.
#
# The seed fixes the victims and the delays' fractions (printed, so that a
# failure can be replayed). The weights cannot be the uninterrupted job's:
# the rounds without the killed worker summed one gradient, not two
# (worker_loss_test checks a joined worker's rounds exactly).
set -euo pipefail
source "$(dirname "$0")/lib/job_processes.sh"
dtrun="$1" example="$2"
shift 2
work=$(mktemp -d "${TMPDIR:-/tmp}/dt-rejoin.XXXXXX")
trap 'rm -rf "$work"' EXIT
export OMP_WAIT_POLICY=passive
epochs=3
then_servers="${DT_REJOIN_THEN_SERVERS:-0}"
# Room for a worker's join, a server's rejoin and its fill before the end.
[ "$then_servers" = 1 ] && epochs=5
store="${DT_REJOIN_STORE:-dist_sync}"
servers=2
[ "$store" = allreduce ] && servers=0
job_args=(--model mlp --kvstore "$store" --batch-size 64 --threads 1 --lr 0.05 --momentum 0.9 --epochs "$epochs")
# The workers' checkpoints, compared once the job ended (allreduce).
[ "$store" = allreduce ] && job_args+=(--checkpoint-dir "$work/checkpoints")
tag="dt-rejoin-$$-$RANDOM"
log="$work/rejoin.log"

fail() { echo "FAIL: $1"; grep "disttrain\|^dtrun\|epoch\|failed\|error" "$log" | tail -40; exit 1; }

# Starts the job in the background with up to $1 restarts; sets job_pid.
start_job() {
  rm -rf "$work"/metrics*.jsonl "$work/checkpoints"
  # shellcheck disable=SC2086 # options, split on purpose
  "$dtrun" -n 2 -s "$servers" --timeout 600 --worker-loss continue --max-restarts "$1" ${DT_REJOIN_DTRUN_ARGS:-} \
    --env "DT_JOB_TAG=$tag" -- \
    "$example" "${job_args[@]}" --metrics "$work/metrics.jsonl" > "$log" 2>&1 &
  job_pid=$!
}

# The pid of worker RANK's latest process (a restarted one has
# DT_WORKER_RESTART_COUNT set), nothing when none runs.
worker_pid() {
  local rank=$1 f p latest=""
  # One grep over every environment first: a kill must land when drawn.
  for f in $(grep -lsxz "DT_JOB_TAG=$tag" /proc/[0-9]*/environ); do
    grep -qsxz "DMLC_ROLE=worker" "$f" && grep -qsxz "DMLC_WORKER_ID=$rank" "$f" || continue
    p=${f#/proc/}
    p=${p%/environ}
    if [ -z "$latest" ] || [ "$p" -gt "$latest" ]; then latest=$p; fi
  done
  echo "$latest"
}

wait_for_training() {
  local i
  for i in $(seq 600); do
    kill -0 "$job_pid" 2>/dev/null || return 1
    grep -qs "\[worker 0\] training " "$log" && [ -n "$(worker_pid 1)" ] && return 0
    sleep 0.1
  done
  fail "the job did not start training within 60 s"
}

# After the job: exit 0 and a clean end. (A kill drawn near the end may
# find the other worker finished: then nothing is started again.)
check_job() {
  local what=$1 rc=0
  wait "$job_pid" || rc=$?
  [ "$rc" -eq 0 ] || fail "$what: dtrun exited $rc"
  grep -q "dtrun: job finished" "$log" || fail "$what: no clean end"
  [ "$store" = allreduce ] || return 0
  # Every epoch both workers finished, the joined one included, ended with
  # the same weights, optimizer state and step on both.
  local dir compared=0
  for dir in "$work"/checkpoints/epoch-*; do
    [ -f "$dir/worker-0.safetensors" ] && [ -f "$dir/worker-1.safetensors" ] || continue
    cmp -s "$dir/worker-0.safetensors" "$dir/worker-1.safetensors" ||
      fail "$what: the workers' checkpoints of ${dir##*/} differ"
    compared=$((compared + 1))
  done
  [ "$compared" -gt 0 ] || fail "$what: no epoch has both workers' checkpoints"
}

# The pid of server RANK's first process (dtrun's, not a restarted one).
server_pid() { job_process "$tag" server "$1" 0; }

# Waits up to 30 s for TEXT in the log; fails naming WHAT otherwise.
wait_for_line() {
  local text=$1 what=$2 i
  for i in $(seq 300); do
    grep -qs "$text" "$log" && return 0
    kill -0 "$job_pid" 2>/dev/null || break
    sleep 0.1
  done
  grep -qs "$text" "$log" || fail "$what"
}

if [ $# -eq 0 ] && [ "$then_servers" = 1 ]; then
  start_job 2
  wait_for_training || fail "the job ended before it started"
  wait_for_line "\[worker 0\] epoch 1/$epochs:" "epoch 1 did not end"
  pid=$(worker_pid 1)
  [ -n "$pid" ] || fail "worker 1 was not running in epoch 2"
  server1=$(server_pid 1) server0=$(server_pid 0)
  kill -9 "$pid"
  wait_for_line "joined the running job in the place of worker 1" "worker 1 did not join again"
  sleep 0.5  # its rounds under way on both servers
  kill -9 "$server1"
  wait_for_line "have two holders again after 1 server loss(es) and 1 rejoin(s)" \
    "the rejoined server's copies were not reported filled"
  kill -0 "$server0" 2>/dev/null || fail "server 0 was not running when server 1's copies were filled"
  kill -9 "$server0"
  check_job "worker 1 killed and joined again, server 1 killed and rejoined, then server 0 killed"
  grep -q "server 1 killed by signal 9 (Killed); starting it again to rejoin the running job as a replica" "$log" ||
    fail "dtrun did not start server 1 again"
  grep -q "server 0 killed by signal 9" "$log" || fail "dtrun did not report server 0 killed"
  grep -q "\[worker 1\] epoch $epochs/$epochs:\|\"epoch\": *$epochs\b" "$log" "$work/metrics-worker1.jsonl" ||
    fail "the joined worker 1 did not train epoch $epochs"
  ! grep -q "which the job goes on without" "$log" || fail "a server refused the joined worker's push"
  echo "OK: worker 1 killed and joined the running job; server 1 killed, started again, and rejoined knowing" \
    "of worker 1; once its copies were filled server 0 was killed, and the job ended on the rejoined server"
  exit 0
fi

if [ $# -eq 0 ]; then
  start_job 1
  wait_for_training || fail "the job ended before it started"
  for i in $(seq 1200); do
    grep -qs "\[worker 0\] epoch 1/$epochs:" "$log" && break
    kill -0 "$job_pid" 2>/dev/null || break
    sleep 0.1
  done
  grep -qs "\[worker 0\] epoch 1/$epochs:" "$log" || fail "epoch 1 did not end"
  sleep 0.3  # into epoch 2: rounds in flight
  pid=$(worker_pid 1)
  [ -n "$pid" ] || fail "worker 1 was not running in epoch 2"
  kill -9 "$pid"
  check_job "worker 1 killed in epoch 2"
  grep -q "worker 1 killed by signal 9" "$log" || fail "dtrun did not report worker 1 killed"
  grep -q "starting it again to rejoin the running job" "$log" || fail "dtrun did not start worker 1 again"
  grep -q "joined the running job in the place of worker 1" "$log" || fail "the scheduler did not take worker 1 back"
  # (Without servers it is let in once its trainer is ready and the others
  # heard of it: under load that may be in epoch 3.)
  grep -q "\[worker 1\].*joined the running job at epoch 2\|\[worker 1\].*joined the running job at epoch 3.*handed over" \
    "$log" || fail "the trainer did not go on from the job's step"
  if [ "$store" = allreduce ]; then
    grep -q "\[worker 0\].*let worker(s) 1 into the job" "$log" || fail "worker 0 did not let worker 1 in"
    grep -q "\[worker 1\].*with the weights and optimizer state the workers in it handed over" "$log" ||
      fail "worker 1 did not take worker 0's state"
  fi
  grep -q "worker 1 rejoined the job after a restart" "$log" || fail "dtrun's summary does not say worker 1 rejoined"
  # Worker 1 logs its epochs beside worker 0's; the joined one goes on in its
  # predecessor's file.
  grep -q "\"epoch\": *$epochs\b" "$work/metrics-worker1.jsonl" ||
    fail "the joined worker 1 did not train epoch $epochs: $(cat "$work/metrics-worker1.jsonl")"
  grep -q "\[worker 0\] epoch $epochs/$epochs:" "$log" || fail "worker 0 did not train epoch $epochs"
  echo "OK: worker 1 killed in epoch 2, started again by dtrun, joined the running job: $(
    grep -o "joined the running job at epoch [0-9]*, batch [0-9]*" "$log" | head -1); the job finished"
  exit 0
fi

# How long the uninterrupted job trains: from worker 0's "training" line to
# its end.
straight_tenths=$(uninterrupted_training_tenths "$work/straight.log" "$dtrun" -n 2 -s "$servers" --timeout 300 -- "$example" "${job_args[@]}")

for seed in "$@"; do
  RANDOM=$seed
  kills=$((1 + RANDOM % 2))
  victims=() delays=()
  for k in $(seq "$kills"); do
    victims+=($((RANDOM % 2)))
    delays+=($((straight_tenths * (5 + RANDOM % 76) / 100)))  # tenths of a second into training
  done
  if [ "$kills" -eq 2 ] && [ "${delays[0]}" -gt "${delays[1]}" ]; then  # in the order they fall
    victims=("${victims[1]}" "${victims[0]}") delays=("${delays[1]}" "${delays[0]}")
  fi
  # One restart more than kills: losing both workers at once ends the job
  # (the last worker lost), which dtrun then restarts whole. (Without
  # servers that includes the last worker holding the job's state lost
  # before a joined one had all of it.)
  start_job 3
  wait_for_training || fail "seed $seed: the job ended before it started"
  begun=$(date +%s%N)
  killed=()
  for k in $(seq 0 $((kills - 1))); do
    wait_tenths=$(( delays[k] - ($(date +%s%N) - begun) / 100000000 ))
    [ "$wait_tenths" -le 0 ] || sleep "$((wait_tenths / 10)).$((wait_tenths % 10))"
    pid=$(worker_pid "${victims[k]}")
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null && killed+=("${victims[k]}@${delays[k]}")
  done
  if [ "${#killed[@]}" -eq 0 ]; then
    wait "$job_pid" || true
    echo "OK: seed $seed: worker(s) ${victims[*]} at tenths ${delays[*]}: every kill came too late (the job had" \
      "ended after $(( ($(date +%s%N) - begun) / 100000000 )) tenths)"
    continue
  fi
  check_job "seed $seed: ${killed[*]}"
  # Every worker dtrun started again joined, or found the job over.
  restarted=$(grep -c "starting it again to rejoin" "$log" || true)
  # (Without servers a worker seated in the place is let in only at a batch
  # of the others: one seated as they finish finds the job over.)
  joined_line="joined the running job in the place"
  [ "$store" = allreduce ] && joined_line="was let into the running job"
  joined=$(grep -c "$joined_line" "$log" || true)
  too_late=$(grep -c "there was no running job to rejoin" "$log" || true)
  # (A kill may fall on a worker started again while it waits to be let in.)
  killed_waiting=$(grep -c "which waited to be let into the job, was lost" "$log" || true)
  if [ "$store" = allreduce ]; then
    # One the others never let in, as they finished, is told so; dtrun may
    # start it again if it exits while the last other worker is still
    # exiting, and that one finds no job: either line may say it, so the
    # lines may count one worker twice.
    too_late=$((too_late + $(grep -c "joined too late: every worker in the job finished" "$log" || true)))
  fi
  accounted=$((joined + too_late + killed_waiting))
  [ "$store" != allreduce ] || [ "$accounted" -lt "$restarted" ] || accounted=$restarted
  if ! grep -q "restarting the whole job" "$log" && [ "$accounted" -ne "$restarted" ]; then
    fail "seed $seed: ${killed[*]}: $restarted worker(s) started again, $joined joined, $too_late found the job over," \
      "$killed_waiting killed while waiting to be let in"
  fi
  echo "OK: seed $seed: worker(s)@tenths ${killed[*]} killed (the uninterrupted job trained $straight_tenths);" \
    "$(grep -c "$joined_line" "$log") join(s), $(grep -c "restarting the whole job" "$log")" \
    "whole-job restart(s), the job finished"
done
