# Sourced by scripts that kill processes of a job they started with dtrun:
# finds them by variables dtrun gives them, so that other jobs on the same
# machine are never touched.
#
#   job_process TAG ROLE RANK RESTART
#
# prints the pid of ROLE (scheduler, server, worker) number RANK among the
# processes whose environment holds DT_JOB_TAG=TAG (pass it with
# `dtrun --env DT_JOB_TAG=TAG`) and DT_RESTART_COUNT=RESTART (which run of a
# job dtrun --max-restarts restarted); nothing while it does not run.
# Workers are told apart by DMLC_WORKER_ID; servers, which learn their rank
# from the scheduler, by the order of their pids.
job_process() {
  local tag=$1 role=$2 rank=$3 restart=$4 p env matches=()
  for p in /proc/[0-9]*; do
    env=$(tr '\0' '\n' 2>/dev/null < "$p/environ") || continue
    grep -qx "DT_JOB_TAG=$tag" <<< "$env" || continue
    grep -qx "DT_RESTART_COUNT=$restart" <<< "$env" || continue
    grep -qx "DMLC_ROLE=$role" <<< "$env" || continue
    if [ "$role" = worker ]; then
      grep -qx "DMLC_WORKER_ID=$rank" <<< "$env" && { echo "${p#/proc/}"; return; }
    else
      matches+=("${p#/proc/}")
    fi
  done
  [ "${#matches[@]}" -gt 0 ] || return 0
  printf '%s\n' "${matches[@]}" | sort -n | sed -n "$((rank + 1))p"
}

#   uninterrupted_training_tenths LOG COMMAND...
#
# runs COMMAND (a dtrun job of the example, output to LOG) to its end and
# prints how long it trained, in tenths of a second: from worker 0's
# "training" line to the job's end. What a chaos script draws its kill
# times from. A failed job fails the script.
uninterrupted_training_tenths() {
  local log=$1 pid i started
  shift
  "$@" > "$log" 2>&1 &
  pid=$!
  for i in $(seq 600); do
    grep -qs "\[worker 0\] training " "$log" && break
    sleep 0.05
  done
  started=$(date +%s%N)
  wait "$pid" || { echo "FAIL: the uninterrupted job failed" >&2; tail -20 "$log" >&2; return 1; }
  echo $(( ($(date +%s%N) - started) / 100000000 ))
}
