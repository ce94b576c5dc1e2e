#!/bin/bash
# Issue 19, item 2, for a job without servers: workers of an `allreduce`
# job (dtrun -n 3 -s 0 --worker-loss continue) killed with kill -9; the
# workers that remain regroup their ring over themselves, settle the
# all-reduce the kill interrupted, and the job finishes. dtrun runs the
# example (MLP, SGD with momentum on every worker, 3 workers, 3 epochs).
#
#   dist_allreduce_worker_loss.sh DTRUN EXAMPLE          kill -9 worker 1 in epoch 2
#   dist_allreduce_worker_loss.sh DTRUN EXAMPLE SEED...  per seed, one or two
#                                                        kill -9s of distinct
#                                                        workers drawn from the
#                                                        three, at times drawn
#                                                        from 5-80% of the
#                                                        uninterrupted job's
#                                                        training time
#
# The seed fixes the victims and the delays' fractions (printed, so that a
# failure can be replayed). worker_loss_test checks the sums exactly; this
# checks the training job around them: every survivor regroups once per
# loss, and the job ends cleanly.
set -euo pipefail
source "$(dirname "$0")/lib/job_processes.sh"
dtrun="$1" example="$2"
shift 2
work=$(mktemp -d "${TMPDIR:-/tmp}/dt-allreduce-loss.XXXXXX")
trap 'rm -rf "$work"' EXIT
export OMP_WAIT_POLICY=passive
epochs=3
job_args=(--model mlp --kvstore allreduce --batch-size 64 --threads 1 --lr 0.05 --momentum 0.9 --epochs "$epochs")
# Each worker's metrics log says when it finished its last epoch.
job_args+=(--metrics "$work/metrics.jsonl")
tag="dt-allreduce-loss-$$-$RANDOM"
log="$work/job.log"

# Whether worker $1 has written its last epoch's metrics line.
finished() {
  local file="$work/metrics.jsonl"
  [ "$1" -eq 0 ] || file="$work/metrics-worker$1.jsonl"
  grep -qs "\"epoch\": *$epochs\b" "$file"
}

fail() { echo "FAIL: $1"; grep "disttrain\|^dtrun\|epoch\|failed\|error" "$log" | tail -40; exit 1; }

start_job() {
  rm -f "$work"/metrics*.jsonl
  "$dtrun" -n 3 -s 0 --timeout 300 --worker-loss continue --env "DT_JOB_TAG=$tag" -- \
    "$example" "${job_args[@]}" > "$log" 2>&1 &
  job_pid=$!
}

wait_for_training() {
  local i
  for i in $(seq 600); do
    kill -0 "$job_pid" 2>/dev/null || return 1
    grep -qs "\[worker 0\] training " "$log" && [ -n "$(job_process "$tag" worker 2 0)" ] && return 0
    sleep 0.1
  done
  fail "the job did not start training within 60 s"
}

# After the job: exit 0, a clean end, and each survivor regrouped once for
# every worker lost before it finished.
check_job() {
  local what=$1 rc=0 lost
  wait "$job_pid" || rc=$?
  [ "$rc" -eq 0 ] || fail "$what: dtrun exited $rc"
  grep -q "dtrun: job finished" "$log" || fail "$what: no clean end"
  ! grep -q "worker failed\|Error" "$log" || fail "$what: a worker failed"
  lost=$(grep -c "the job goes on without it" "$log" || true)
  [ "$lost" -gt 0 ] || return 0
  grep -q "regrouped with workers" "$log" || fail "$what: $lost worker(s) lost, and no survivor regrouped"
}

if [ $# -eq 0 ]; then
  start_job
  wait_for_training || fail "the job ended before it started"
  for i in $(seq 1200); do
    grep -qs "\[worker 0\] epoch 1/$epochs:" "$log" && break
    kill -0 "$job_pid" 2>/dev/null || break
    sleep 0.1
  done
  grep -qs "\[worker 0\] epoch 1/$epochs:" "$log" || fail "epoch 1 did not end"
  sleep 0.3  # into epoch 2: all-reduces in flight
  pid=$(job_process "$tag" worker 1 0)
  [ -n "$pid" ] || fail "worker 1 was not running in epoch 2"
  kill -9 "$pid"
  check_job "worker 1 killed in epoch 2"
  grep -q "worker 1 killed by signal 9 (Killed); the job goes on without it" "$log" ||
    fail "dtrun did not report worker 1 lost and the job going on"
  grep -q "\[worker 0\] .*regrouped with workers 0, 2 after the loss of worker(s) 1" "$log" ||
    fail "worker 0 did not regroup with worker 2"
  grep -q "\[worker 2\] .*regrouped with workers 0, 2 after the loss of worker(s) 1" "$log" ||
    fail "worker 2 did not regroup with worker 0"
  [ "$(grep -c "regrouped with workers" "$log")" -eq 2 ] || fail "a survivor regrouped more than once"
  grep -q "\[worker 0\] epoch $epochs/$epochs:" "$log" || fail "worker 0 did not train epoch $epochs"
  echo "OK: worker 1 killed in epoch 2; workers 0 and 2 regrouped ($(
    grep -o "regrouped with workers 0, 2 after the loss of worker(s) 1: .*" "$log" | head -1)); the job finished"
  exit 0
fi

# How long the uninterrupted job trains: from worker 0's "training" line to
# its end.
straight_tenths=$(uninterrupted_training_tenths "$work/straight.log" "$dtrun" -n 3 -s 0 --timeout 300 -- "$example" "${job_args[@]}")

for seed in "$@"; do
  RANDOM=$seed
  kills=$((1 + RANDOM % 2))
  first=$((RANDOM % 3))
  victims=("$first") delays=($((straight_tenths * (5 + RANDOM % 76) / 100)))
  if [ "$kills" -eq 2 ]; then
    victims+=($(( (first + 1 + RANDOM % 2) % 3 )))
    delays+=($((straight_tenths * (5 + RANDOM % 76) / 100)))
    if [ "${delays[0]}" -gt "${delays[1]}" ]; then  # in the order they fall
      victims=("${victims[1]}" "${victims[0]}") delays=("${delays[1]}" "${delays[0]}")
    fi
  fi
  start_job
  wait_for_training || fail "seed $seed: the job ended before it started"
  begun=$(date +%s%N)
  killed=() skipped=()
  for k in $(seq 0 $((kills - 1))); do
    wait_tenths=$(( delays[k] - ($(date +%s%N) - begun) / 100000000 ))
    [ "$wait_tenths" -le 0 ] || sleep "$((wait_tenths / 10)).$((wait_tenths % 10))"
    pid=$(job_process "$tag" worker "${victims[k]}" 0)
    # A loss is tolerated while another worker goes on: once the others
    # have finished (a loss makes the job shorter than the uninterrupted
    # one the delays were drawn from), losing the last worker ends the job
    # for dtrun, rightly (its own output would be lost). Such a late kill,
    # or one whose victim has ended, is skipped and said so.
    # (A worker that finished its last epoch is as good as gone: it is
    # only saying goodbye. That is checked last, just before the kill: the
    # process scans take long enough for a worker to finish meanwhile.)
    running=()
    for w in 0 1 2; do
      [ "$w" -ne "${victims[k]}" ] && [ -n "$(job_process "$tag" worker "$w" 0)" ] && running+=("$w")
    done
    others=0
    for w in "${running[@]}"; do finished "$w" || others=$((others + 1)); done
    if [ "$others" -gt 0 ] && [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; then
      killed+=("${victims[k]}@${delays[k]}")
    else
      skipped+=("${victims[k]}@${delays[k]}")
    fi
  done
  check_job "seed $seed: worker(s)@tenths ${killed[*]:-none}"
  echo "OK: seed $seed: worker(s)@tenths ${killed[*]:-none} killed${skipped[*]:+, ${skipped[*]} not (the job was ending)} (the uninterrupted job trained" \
    "$straight_tenths); $(grep -c "regrouped with workers" "$log" || true) regroup(s):" \
    "$(grep -o "regrouped with workers [0-9, ]* after the loss of worker(s) [0-9, ]*: [a-z0-9 ]*" "$log" | sort -u |
       tr '\n' ';')"
done
