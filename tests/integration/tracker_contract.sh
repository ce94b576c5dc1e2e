#!/bin/sh
# The launcher contract of MXNet's tools/launch.py (dmlc tracker): ONE
# command line, started through a shell for 1 scheduler + S servers + W
# workers, each with only DMLC_ROLE, DMLC_PS_ROOT_URI, DMLC_PS_ROOT_PORT,
# DMLC_NUM_SERVER and DMLC_NUM_WORKER set (no worker ids; the scheduler
# started last). The program must become its node from that environment and
# every process must exit 0 when the job ends.
#   tracker_contract.sh SERVERS WORKERS COMMAND...
# Passes when all exit 0 within the deadline and a worker printed
# test_accuracy=.
set -u
servers="$1"
workers="$2"
shift 2
work=$(mktemp -d "${TMPDIR:-/tmp}/dt-tracker.XXXXXX")
pids=""
cleanup() {
  for p in $pids; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
start() {  # role name command...
  role="$1"
  name="$2"
  shift 2
  env -u DMLC_WORKER_ID -u DT_PS_ROOT_URL DMLC_ROLE="$role" DMLC_PS_ROOT_URI=127.0.0.1 DMLC_PS_ROOT_PORT="$port" \
    DMLC_NUM_SERVER="$servers" DMLC_NUM_WORKER="$workers" OMP_WAIT_POLICY=passive \
    sh -c '"$@"' sh "$@" > "$work/$name.log" 2>&1 &
  pids="$pids $!"
  echo "$! $name" >> "$work/pids"
}
i=0
while [ "$i" -lt "$workers" ]; do start worker "worker$i" "$@"; i=$((i + 1)); done
i=0
while [ "$i" -lt "$servers" ]; do start server "server$i" "$@"; i=$((i + 1)); done
start scheduler scheduler "$@"

# Every process within the deadline, each with its own status.
deadline=$(( $(date +%s) + 400 ))
failed=0
while read -r pid name; do
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$(date +%s)" -gt "$deadline" ]; then
      echo "FAIL: $name (pid $pid) still running after the deadline"
      failed=1
      break
    fi
    sleep 1
  done
  if [ "$failed" -eq 0 ]; then
    wait "$pid"
    status=$?
    [ "$status" -eq 0 ] || { echo "FAIL: $name exited with status $status"; failed=1; }
  fi
done < "$work/pids"
for log in "$work"/*.log; do
  echo "--- $(basename "$log")"
  cat "$log"
done
[ "$failed" -eq 0 ] || exit 1
grep -h '^test_accuracy=' "$work"/worker*.log > /dev/null || { echo "FAIL: no worker printed test_accuracy="; exit 1; }
echo "OK: one command line served as scheduler, $servers server(s) and $workers worker(s)"
