# Sourced by the stall inspector's scripts, which run one job under dtrun
# and stop one of its processes with SIGSTOP: a work folder ($work, with
# dtrun's output in $out and the processes' logs under $logs), a job tag
# ($tag, for job_process), and a cleanup on exit that continues the stopped
# process ($victim) and ends the job ($job_pid) if the script did not.
#
#   source lib/stalled_job.sh NAME
#   fail MESSAGE            prints the logs' tails and exits 1
#   wait_for FILE REGEX S   whether an extended regex shows up within S s
#   stop_worker_1 DTRUN EXAMPLE WORKERS SERVERS KVSTORE
#                           runs the example's MLP for one epoch under dtrun
#                           (DT_STALL_WARNING_S=2, heartbeats every 0.5 s,
#                           a 60 s heartbeat timeout, status lines every
#                           second) and, once worker 1 has taken steps,
#                           stops it; sets job_pid, victim and stopped (the
#                           time, in seconds)
source "$(dirname "${BASH_SOURCE[0]}")/job_processes.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
tag="$1-$$-$RANDOM"
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
wait_for() {
  local i
  for i in $(seq $(( $3 * 10 ))); do
    grep -Eqs -- "$2" "$1" && return 0
    sleep 0.1
  done
  return 1
}

stop_worker_1() {
  "$1" -n "$3" -s "$4" --log-dir "$logs" --status-every 1 --timeout 110 \
    --env DT_JOB_TAG="$tag" --env DT_STALL_WARNING_S=2 --env DT_HEARTBEAT_INTERVAL_S=0.5 \
    --env DT_HEARTBEAT_TIMEOUT_S=60 \
    "$2" --model mlp --kvstore "$5" --batch-size 32 --threads 1 --epochs 1 > "$out" 2>&1 &
  job_pid=$!
  wait_for "$out" "worker 1 step [0-9]+" 40 || fail "no status line with a step of worker 1"
  victim=$(job_process "$tag" worker 1 0)
  [ -n "$victim" ] || fail "worker 1 is not running"
  kill -STOP "$victim"
  stopped=$(date +%s)
}
