#!/bin/bash
# Issue 19, items 3 and 5: a dist_sync job that loses processes to kill -9
# and is restarted whole by `dtrun --max-restarts` resumes from its checkpoint
# directory and ends with the same weights, bit for bit, as a job that was
# never interrupted. dtrun runs the example (MLP, 2 servers, 2 workers,
# 3 epochs, a checkpoint directory).
#
#   dist_restart_chaos.sh DTRUN EXAMPLE             kill -9 worker 1 once epoch 1
#                                                   is in the directory;
#                                                   --max-restarts 1
#   dist_restart_chaos.sh DTRUN EXAMPLE SEED...     chaos: per seed, 1 or 2 kills,
#                                                   each of a process drawn from
#                                                   the scheduler, the servers and
#                                                   the workers, at a time drawn
#                                                   from 5-60% of the uninterrupted
#                                                   job's time into a run;
#                                                   --max-restarts = the kills
#
# The seed fixes the victims and the delays (printed, so that a failure can be
# replayed with the same seed); where in training a delay lands still depends
# on the machine's speed. A kill drawn after the job has finished is skipped.
set -euo pipefail
source "$(dirname "$0")/lib/job_processes.sh"
dtrun="$1" example="$2"
shift 2
work=$(mktemp -d "${TMPDIR:-/tmp}/dt-chaos.XXXXXX")
trap 'rm -rf "$work"' EXIT
export OMP_WAIT_POLICY=passive
epochs=3
job_args=(--model mlp --kvstore dist_sync --batch-size 64 --threads 1 --lr 0.05 --momentum 0.9 --epochs "$epochs")
# Every process of a job run by this script carries its tag, so that victims
# are found among its processes only (other jobs may run on this machine).
tag="dt-chaos-$$-$RANDOM"

# pid of ROLE number RANK of the job's run that has DT_RESTART_COUNT=RESTART.
find_process() { job_process "$tag" "$1" "$2" "$3"; }

# Starts the job in the background with --max-restarts $1; sets job_pid.
start_job() {
  "$dtrun" -n 2 -s 2 --timeout 600 --max-restarts "$1" --env "DT_JOB_TAG=$tag" -- "$example" "${job_args[@]}" \
    --checkpoint-dir "$work/dir" --checkpoint "$work/chaos.safetensors" > "$work/chaos.log" 2>&1 &
  job_pid=$!
}

# Waits until dtrun has started run RESTART (its processes carry
# DT_RESTART_COUNT=RESTART); false when the job ends first.
wait_for_run() {
  local restart=$1 i
  for i in $(seq 600); do
    kill -0 "$job_pid" 2>/dev/null || return 1
    [ -n "$(find_process worker 0 "$restart")" ] && return 0
    sleep 0.1
  done
  echo "FAIL: run $restart of the job did not start within 60 s"
  exit 1
}

# kill -9 ROLE RANK of run RESTART; false when it is not running.
kill_process() {
  local pid
  pid=$(find_process "$1" "$2" "$3")
  [ -n "$pid" ] || return 1
  kill -9 "$pid" 2>/dev/null
}

# After the job: exit 0, the restarts it needed, and the weights.
check_job() {
  local kills=$1 what=$2 rc=0
  wait "$job_pid" || rc=$?
  if [ "$rc" -ne 0 ]; then echo "FAIL ($what): dtrun exited $rc"; tail -30 "$work/chaos.log"; exit 1; fi
  local restarts
  restarts=$(grep -c "dtrun: restarting the whole job" "$work/chaos.log" || true)
  if [ "$restarts" -ne "$kills" ]; then
    echo "FAIL ($what): $kills kill(s) but $restarts restart(s)"; grep "^dtrun:" "$work/chaos.log"; exit 1
  fi
  cmp -s "$work/straight.safetensors" "$work/chaos.safetensors" ||
    { echo "FAIL ($what): the weights differ from the uninterrupted job's"; grep "^dtrun:" "$work/chaos.log"; exit 1; }
}

started=$(date +%s%N)
"$dtrun" -n 2 -s 2 --timeout 300 -- "$example" "${job_args[@]}" --checkpoint "$work/straight.safetensors" \
  > "$work/straight.log" 2>&1 || { echo "FAIL: the uninterrupted job failed"; tail -20 "$work/straight.log"; exit 1; }
straight_tenths=$(( ($(date +%s%N) - started) / 100000000 ))

if [ $# -eq 0 ]; then
  start_job 1
  wait_for_run 0 || { echo "FAIL: the job ended before it started"; tail "$work/chaos.log"; exit 1; }
  for i in $(seq 1200); do
    grep -qs '"epoch":1' "$work/dir/MANIFEST.json" && break
    kill -0 "$job_pid" 2>/dev/null || break
    sleep 0.1
  done
  grep -qs '"epoch":1' "$work/dir/MANIFEST.json" || { echo "FAIL: no epoch 1 in the directory"; exit 1; }
  kill_process worker 1 0 || { echo "FAIL: worker 1 was not running after epoch 1"; exit 1; }
  check_job 1 "worker 1 killed after epoch 1"
  grep -q "worker 1 killed by signal 9" "$work/chaos.log" || { echo "FAIL: dtrun did not name worker 1"; exit 1; }
  grep -q "job finished (after 1 restart)" "$work/chaos.log" || { echo "FAIL: no final word"; tail "$work/chaos.log"; exit 1; }
  grep -q "\[worker 0\] resuming after epoch 1/$epochs from checkpoint directory" "$work/chaos.log" ||
    { echo "FAIL: the restarted job did not say where it resumed"; tail "$work/chaos.log"; exit 1; }
  if grep -q "\[worker 0\] epoch 1/$epochs:" <(sed -n '/restarting the whole job/,$p' "$work/chaos.log"); then
    echo "FAIL: the restarted job trained epoch 1 again"; exit 1
  fi
  echo "OK: worker 1 killed after epoch 1; dtrun restarted the job, which resumed at epoch 2 and ended" \
    "bit-identical to the uninterrupted job"
  exit 0
fi

victims=(scheduler:0 server:0 server:1 worker:0 worker:1)
for seed in "$@"; do
  rm -rf "$work/dir" "$work/chaos.safetensors"
  RANDOM=$seed
  kills=$((1 + RANDOM % 2))
  plan=() done_kills=0
  for k in $(seq "$kills"); do
    # tenths of a second: 5-60% of the uninterrupted job's time (its start included)
    plan+=("${victims[RANDOM % ${#victims[@]}]}@$((straight_tenths * (5 + RANDOM % 56) / 100))")
  done
  start_job "$kills"
  for k in "${!plan[@]}"; do
    victim=${plan[k]%@*} delay=${plan[k]#*@}
    wait_for_run "$k" || break
    sleep "$((delay / 10)).$((delay % 10))"
    kill_process "${victim%:*}" "${victim#*:}" "$k" || break
    done_kills=$((done_kills + 1))
  done
  # A drawn kill that found its run over is not made: the job may need fewer
  # restarts than it may take.
  check_job "$done_kills" "seed $seed: ${plan[*]}"
  echo "OK: seed $seed: drawn ${plan[*]} (victim:rank@tenths of a second into a run; the uninterrupted job" \
    "took $straight_tenths), $done_kills made; bit-identical after $done_kills restart(s)"
done
