#!/bin/sh
# Data parallelism on one machine without a GPU: a training example with
# --cpus 2 (two replicas, every batch split across them as split_and_load
# does, MXNet's ctx=[mx.cpu(0), mx.cpu(1)]) must train to the accuracy of
# --cpus 1 with the same seed and batch, within MAXDIFF, both at least MIN,
# and its start lines must name the contexts and the "local" store (Gluon's
# default for several contexts, "device", reduces on a GPU; CPU replicas
# reduce on "local", as the library's own trainer chooses). The examples'
# tests (C, Go, Java, Scala) all use it.
#
#   replicas_match.sh MAXDIFF MIN command [args...]
set -eu
maxdiff="$1" min="$2"
shift 2
work=$(mktemp -d "${TMPDIR:-/tmp}/dt-replicas.XXXXXX")
trap 'rm -rf "$work"' EXIT

for n in 1 2; do
  start=$(date +%s)
  status=0
  "$@" --cpus "$n" > "$work/cpus$n.log" 2>&1 || status=$?
  cat "$work/cpus$n.log"
  echo "replicas_match.sh: --cpus $n finished in $(( $(date +%s) - start )) s with exit status $status"
  [ "$status" -eq 0 ] || { echo "FAIL: --cpus $n exited with $status"; exit 1; }
done
grep -q 'kvstore local, .*contexts cpu(0), precision fp32' "$work/cpus1.log" ||
  { echo "FAIL: --cpus 1 does not train on cpu(0) through kvstore local"; exit 1; }
grep -q 'kvstore local, .*contexts cpu(0),cpu(0), precision fp32' "$work/cpus2.log" ||
  { echo "FAIL: --cpus 2 does not train on two CPU contexts through kvstore local"; exit 1; }
one=$(sed -n 's/.*test_accuracy=\([0-9.]*\)$/\1/p' "$work/cpus1.log" | tail -n 1)
two=$(sed -n 's/.*test_accuracy=\([0-9.]*\)$/\1/p' "$work/cpus2.log" | tail -n 1)
[ -n "$one" ] && [ -n "$two" ] || { echo "FAIL: no test_accuracy= line"; exit 1; }
awk -v a="$one" -v b="$two" -v m="$maxdiff" -v lo="$min" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= m && a >= lo && b >= lo) }' ||
  { echo "FAIL: test_accuracy $two with --cpus 2 against $one with --cpus 1 (max difference $maxdiff, at least $min)"; exit 1; }
echo "OK: test_accuracy $two with --cpus 2, $one with --cpus 1"
