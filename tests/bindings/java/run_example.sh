#!/bin/sh
# Runs a training example (e.g. the Java one under dtrun with dist_sync) and
# checks its last line: passes when the command exits 0 and reports
# test_accuracy=<fraction> at or above MIN.
#
#   run_example.sh MIN command [args...]
set -eu
min="$1"
shift
log=$(mktemp "${TMPDIR:-/tmp}/dt-example.XXXXXX")
trap 'rm -f "$log"' EXIT
start=$(date +%s)
status=0
"$@" > "$log" 2>&1 || status=$?
cat "$log"
echo "run_example.sh: finished in $(( $(date +%s) - start )) s with exit status $status"
[ "$status" -eq 0 ] || { echo "FAIL: the example exited with $status"; exit 1; }
accuracy=$(sed -n 's/.*test_accuracy=\([0-9.]*\)$/\1/p' "$log" | tail -n 1)
[ -n "$accuracy" ] || { echo "FAIL: no test_accuracy= line"; exit 1; }
awk -v a="$accuracy" -v m="$min" 'BEGIN { exit !(a >= m) }' || { echo "FAIL: test_accuracy=$accuracy < $min"; exit 1; }
echo "OK: test_accuracy=$accuracy >= $min"
