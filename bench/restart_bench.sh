#!/bin/bash
# Issue 19: how long a job takes to go on after kill -9 of a worker (three
# ways it can go on) or of a server (replicated). One JSON line per way.
#
#   bench/restart_bench.sh [--build-dir DIR] [--epochs N] [--heartbeat-timeout-s S] [--ways LIST]
#
# LIST: the ways below to run, comma-separated (default: all).
#
# The job is the example's (MLP on Fashion-MNIST, dist_sync, 2 servers,
# 2 workers, batch 64). Worker 1 is killed just after epoch 1 is complete:
#  - "restart": dtrun --max-restarts 1 with a checkpoint directory; times
#    from the kill to dtrun's restart line, to the new run's "resuming after
#    epoch 1" (training goes on), and to the end of its first epoch; beside
#    the epoch time of the run before the kill.
#  - "continue": --worker-loss continue; times from the kill to dtrun's
#    report of the loss and to the scheduler's ("the job goes on"), and the
#    epoch in which the kill fell beside the epoch before it (with one worker
#    left an epoch has half the samples to train: the shard of the lost one
#    is not trained on).
#  - "rejoin": --worker-loss continue --max-restarts 1: dtrun starts the
#    killed worker again alone and it joins the running job; times from the
#    kill to dtrun's restart line, to the scheduler taking it back, and to
#    its trainer going on from the job's step (its first push follows).
#  - "replica": --server-replication 1, and server 0 is killed instead;
#    times from the kill to dtrun's and the scheduler's report, and to
#    worker 0's switch to the replicas; the epoch with the kill beside the
#    one before.
#  - "newcopy": --server-replication 1 with 3 servers, and server 1 is
#    killed; times from the kill to the scheduler's report and to its
#    "two holders again" (every worker saw the new copies of the lost
#    server's parts filled, from the other holders, while training went
#    on); the epoch with the kill beside the one before.
#  - "serverrejoin": --server-replication 1 --max-restarts 1 with 2
#    servers, and server 1 is killed: dtrun starts it again, it takes the
#    job's settings and the lost server's place, and the workers give it
#    new copies of every part, filled while training goes on; times from the
#    kill to dtrun's restart line, to the scheduler announcing it, and to
#    "two holders again after 1 server loss(es) and 1 rejoin(s)"; the epoch
#    with the kill beside the one before.
#  - "regroup": a job without servers (allreduce, 3 workers, -s 0) under
#    --worker-loss continue; times from the kill to the scheduler's report
#    and to worker 0's regroup with worker 2 (its all-reduces go on); the
#    epoch with the kill beside the one before, and epoch 1 of the same job
#    under the default policy, which keeps no copies for a regroup (the
#    cost of being ready for one).
#  - "allreducerejoin": that job (2 workers) under --worker-loss continue
#    --max-restarts 1: dtrun starts the killed worker again, worker 0 lets
#    it in before a batch and hands it its trainer's state; times from the
#    kill to dtrun's restart line, to the scheduler seating it, to worker
#    0 letting it in, and to its trainer going on from the job's step; the
#    epoch with the kill beside the one before, and epoch 1 of the same job
#    under the default policy (no vote before each batch, no copies kept).
# Every output line is stamped as it arrives, so the times include the
# pipe's delay (milliseconds).
set -euo pipefail
build=build epochs=3 hb_timeout=5 ways=restart,continue,rejoin,replica,newcopy,serverrejoin,regroup,allreducerejoin
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --heartbeat-timeout-s) hb_timeout=$2; shift 2 ;;
    --ways) ways=$2; shift 2 ;;
    *) echo "usage: $0 [--build-dir DIR] [--epochs N] [--heartbeat-timeout-s S] [--ways LIST]" >&2; exit 2 ;;
  esac
done
# Whether way $1 was asked for.
wanted() { [[ ",$ways," == *",$1,"* ]]; }
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../tests/integration/lib/job_processes.sh"
dtrun="$build/dtrun" example="$build/examples/train_fashion_mnist"
work=$(mktemp -d "${TMPDIR:-/tmp}/dt-restart-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
export OMP_WAIT_POLICY=passive
tag="dt-restart-bench-$$"

# Lines of stdin, each after the time it arrived (s since the epoch).
stamp() { while IFS= read -r line; do printf '%s %s\n' "$(date +%s.%N)" "$line"; done; }

# The stamp of the first line of FILE after time T that matches PATTERN.
first_after() {
  awk -v t="$2" -v p="$3" '$1 >= t && index($0, p) { print $1; exit }' "$1"
}
# The seconds an epoch line of worker 0 reports ("epoch E/N: ... 12.3 s").
epoch_seconds() { grep "\[worker 0\] epoch $2/$epochs:" "$1" | head -1 | sed 's/.* \([0-9.]*\) s\( sent.*\)\?$/\1/'; }

# Runs the job with the extra dtrun options $@ (before --), kills ROLE RANK
# once epoch 1 is in the log, waits for the job; sets kill_at.
layout=(-n 2 -s 2)
run_job() {
  local log=$1 role=$2 rank=$3
  shift 3
  ("$dtrun" "${layout[@]}" --timeout 900 --env "DT_JOB_TAG=$tag" --env "DT_HEARTBEAT_TIMEOUT_S=$hb_timeout" "$@" \
    -- "$example" "${job_args[@]}" 2>&1 | stamp > "$log") &
  local job=$!
  # With a checkpoint directory, epoch 1 is complete once the manifest says so.
  for _ in $(seq 6000); do
    if [ -n "$ckpt_dir" ]; then
      grep -qs '"epoch":1' "$ckpt_dir/MANIFEST.json" && break
    else
      grep -qs "\[worker 0\] epoch 1/$epochs:" "$log" && break
    fi
    kill -0 "$job" 2>/dev/null || break
    sleep 0.05
  done
  local pid
  pid=$(job_process "$tag" "$role" "$rank" 0)
  [ -n "$pid" ] || { echo "restart_bench: $role $rank was not running after epoch 1" >&2; cat "$log" >&2; exit 1; }
  kill_at=$(date +%s.%N)
  kill -9 "$pid"
  wait "$job" || true
  grep -q "dtrun: job finished" "$log" || { echo "restart_bench: the job did not finish" >&2; tail "$log" >&2; exit 1; }
}

since() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == "") print "null"; else printf "%.3f", b - a }'; }

ckpt_dir="$work/dir"
job_args=(--model mlp --kvstore dist_sync --batch-size 64 --threads 1 --lr 0.05 --momentum 0.9 --epochs "$epochs"
          --checkpoint-dir "$ckpt_dir")
if wanted restart; then
run_job "$work/restart.log" worker 1 --max-restarts 1
printf '{"bench":"restart_after_kill","way":"restart","victim":"worker 1","epochs":%d,"epoch_s_before":%s,' \
  "$epochs" "$(epoch_seconds "$work/restart.log" 1)"
printf '"kill_to_restart_s":%s,"kill_to_resumed_s":%s,"kill_to_first_epoch_end_s":%s,"first_epoch_s_after":%s}\n' \
  "$(since "$kill_at" "$(first_after "$work/restart.log" "$kill_at" "dtrun: restarting the whole job")")" \
  "$(since "$kill_at" "$(first_after "$work/restart.log" "$kill_at" "[worker 0] resuming after epoch")")" \
  "$(since "$kill_at" "$(first_after "$work/restart.log" "$kill_at" "[worker 0] epoch 2/$epochs:")")" \
  "$(epoch_seconds "$work/restart.log" 2)"

fi

ckpt_dir=""
job_args=(--model mlp --kvstore dist_sync --batch-size 64 --threads 1 --lr 0.05 --momentum 0.9 --epochs "$epochs")
if wanted continue; then
run_job "$work/continue.log" worker 1 --worker-loss continue
printf '{"bench":"restart_after_kill","way":"continue","victim":"worker 1","epochs":%d,"heartbeat_timeout_s":%s,' \
  "$epochs" "$hb_timeout"
printf '"kill_to_dtrun_notice_s":%s,"kill_to_scheduler_goes_on_s":%s,"epoch_s_before":%s,"epoch_s_with_kill":%s}\n' \
  "$(since "$kill_at" "$(first_after "$work/continue.log" "$kill_at" "the job goes on without it")")" \
  "$(since "$kill_at" "$(first_after "$work/continue.log" "$kill_at" "the job goes on with")")" \
  "$(epoch_seconds "$work/continue.log" 1)" "$(epoch_seconds "$work/continue.log" 2)"

fi

if wanted rejoin; then
run_job "$work/rejoin.log" worker 1 --worker-loss continue --max-restarts 1
printf '{"bench":"restart_after_kill","way":"rejoin","victim":"worker 1","epochs":%d,"heartbeat_timeout_s":%s,' \
  "$epochs" "$hb_timeout"
printf '"kill_to_restart_s":%s,"kill_to_scheduler_took_it_back_s":%s,"kill_to_trainer_goes_on_s":%s,' \
  "$(since "$kill_at" "$(first_after "$work/rejoin.log" "$kill_at" "starting it again to rejoin")")" \
  "$(since "$kill_at" "$(first_after "$work/rejoin.log" "$kill_at" "joined the running job in the place of")")" \
  "$(since "$kill_at" "$(first_after "$work/rejoin.log" "$kill_at" "trainer: joined the running job at")")"
printf '"epoch_s_before":%s,"epoch_s_with_kill":%s}\n' \
  "$(epoch_seconds "$work/rejoin.log" 1)" "$(epoch_seconds "$work/rejoin.log" 2)"

fi

if wanted replica; then
run_job "$work/replica.log" server 0 --server-replication 1
printf '{"bench":"restart_after_kill","way":"replica","victim":"server 0","epochs":%d,"heartbeat_timeout_s":%s,' \
  "$epochs" "$hb_timeout"
printf '"kill_to_dtrun_notice_s":%s,"kill_to_scheduler_goes_on_s":%s,"kill_to_worker_switched_s":%s,' \
  "$(since "$kill_at" "$(first_after "$work/replica.log" "$kill_at" "the job goes on with the replicas")")" \
  "$(since "$kill_at" "$(first_after "$work/replica.log" "$kill_at" "the job goes on with 1 of 2 servers")")" \
  "$(since "$kill_at" "$(first_after "$work/replica.log" "$kill_at" "[worker 0] disttrain worker: server")")"
printf '"epoch_s_before":%s,"epoch_s_with_kill":%s}\n' \
  "$(epoch_seconds "$work/replica.log" 1)" "$(epoch_seconds "$work/replica.log" 2)"

fi

if wanted newcopy; then
layout=(-n 2 -s 3)
run_job "$work/newcopy.log" server 1 --server-replication 1
printf '{"bench":"restart_after_kill","way":"newcopy","victim":"server 1","servers":3,"epochs":%d,"heartbeat_timeout_s":%s,' \
  "$epochs" "$hb_timeout"
printf '"kill_to_scheduler_goes_on_s":%s,"kill_to_new_copies_filled_s":%s,' \
  "$(since "$kill_at" "$(first_after "$work/newcopy.log" "$kill_at" "the job goes on with 2 of 3 servers")")" \
  "$(since "$kill_at" "$(first_after "$work/newcopy.log" "$kill_at" "have two holders again")")"
printf '"epoch_s_before":%s,"epoch_s_with_kill":%s}\n' \
  "$(epoch_seconds "$work/newcopy.log" 1)" "$(epoch_seconds "$work/newcopy.log" 2)"
fi

if wanted serverrejoin; then
layout=(-n 2 -s 2)
run_job "$work/serverrejoin.log" server 1 --server-replication 1 --max-restarts 1
printf '{"bench":"restart_after_kill","way":"serverrejoin","victim":"server 1","servers":2,"epochs":%d,"heartbeat_timeout_s":%s,' \
  "$epochs" "$hb_timeout"
printf '"kill_to_restart_s":%s,"kill_to_rejoined_s":%s,"kill_to_copies_filled_s":%s,' \
  "$(since "$kill_at" "$(first_after "$work/serverrejoin.log" "$kill_at" "starting it again to rejoin")")" \
  "$(since "$kill_at" "$(first_after "$work/serverrejoin.log" "$kill_at" "rejoined the running job; the job has")")" \
  "$(since "$kill_at" "$(first_after "$work/serverrejoin.log" "$kill_at" "and 1 rejoin(s)")")"
printf '"epoch_s_before":%s,"epoch_s_with_kill":%s}\n' \
  "$(epoch_seconds "$work/serverrejoin.log" 1)" "$(epoch_seconds "$work/serverrejoin.log" 2)"
fi

# The job's epoch 1 under the default policy (no worker loss tolerated),
# in LOG: the cost of being ready for a loss, beside the other runs' epochs.
run_fail_policy_epoch() {
  local one_epoch=("${job_args[@]}")
  one_epoch[${#one_epoch[@]}-1]=1  # --epochs 1
  "$dtrun" "${layout[@]}" --timeout 900 -- "$example" "${one_epoch[@]}" > "$1" 2>&1
}

if wanted regroup; then
layout=(-n 3 -s 0)
job_args=(--model mlp --kvstore allreduce --batch-size 64 --threads 1 --lr 0.05 --momentum 0.9 --epochs "$epochs")
run_job "$work/regroup.log" worker 1 --worker-loss continue
run_fail_policy_epoch "$work/fail_policy.log"
printf '{"bench":"restart_after_kill","way":"regroup","victim":"worker 1","workers":3,"epochs":%d,"heartbeat_timeout_s":%s,' \
  "$epochs" "$hb_timeout"
printf '"kill_to_scheduler_goes_on_s":%s,"kill_to_worker0_regrouped_s":%s,' \
  "$(since "$kill_at" "$(first_after "$work/regroup.log" "$kill_at" "the job goes on with")")" \
  "$(since "$kill_at" "$(first_after "$work/regroup.log" "$kill_at" "[worker 0] disttrain allreduce: worker 0 regrouped")")"
printf '"epoch_s_before":%s,"epoch_s_with_kill":%s,"epoch1_s_fail_policy":%s}\n' \
  "$(epoch_seconds "$work/regroup.log" 1)" "$(epoch_seconds "$work/regroup.log" 2)" \
  "$(epochs=1 epoch_seconds "$work/fail_policy.log" 1)"
fi

if wanted allreducerejoin; then
layout=(-n 2 -s 0)
job_args=(--model mlp --kvstore allreduce --batch-size 64 --threads 1 --lr 0.05 --momentum 0.9 --epochs "$epochs")
run_job "$work/allreducerejoin.log" worker 1 --worker-loss continue --max-restarts 1
run_fail_policy_epoch "$work/fail_policy2.log"
printf '{"bench":"restart_after_kill","way":"allreducerejoin","victim":"worker 1","workers":2,"epochs":%d,"heartbeat_timeout_s":%s,' \
  "$epochs" "$hb_timeout"
printf '"kill_to_restart_s":%s,"kill_to_scheduler_seated_s":%s,"kill_to_let_in_s":%s,"kill_to_trainer_goes_on_s":%s,' \
  "$(since "$kill_at" "$(first_after "$work/allreducerejoin.log" "$kill_at" "starting it again to rejoin")")" \
  "$(since "$kill_at" "$(first_after "$work/allreducerejoin.log" "$kill_at" "joined the running job in the place of")")" \
  "$(since "$kill_at" "$(first_after "$work/allreducerejoin.log" "$kill_at" "let worker(s) 1 into the job")")" \
  "$(since "$kill_at" "$(first_after "$work/allreducerejoin.log" "$kill_at" "trainer: joined the running job at")")"
printf '"epoch_s_before":%s,"epoch_s_with_kill":%s,"epoch1_s_fail_policy":%s}\n' \
  "$(epoch_seconds "$work/allreducerejoin.log" 1)" "$(epoch_seconds "$work/allreducerejoin.log" 2)" \
  "$(epochs=1 epoch_seconds "$work/fail_policy2.log" 1)"
fi
