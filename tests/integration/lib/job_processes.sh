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
