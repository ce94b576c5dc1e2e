#!/bin/sh
# The shared library must export the C API (dt_*) and nothing else; given
# the header, every function it declares (DT_API) must be among them.
#   check_exports.sh LIBRARY [DT_C_API_H]
set -eu
lib="$1"
header="${2:-}"
symbols=$(nm -D --defined-only "$lib" | awk '{print $NF}')
count=$(printf '%s\n' "$symbols" | grep -c '^dt_' || true)
others=$(printf '%s\n' "$symbols" | grep -v '^dt_' | grep -v '^$' || true)
if [ -n "$others" ]; then
  echo "FAIL: $lib exports symbols outside dt_*:"
  printf '%s\n' "$others" | head -20
  exit 1
fi
if [ "$count" -lt 10 ]; then
  echo "FAIL: only $count dt_* symbols exported"
  exit 1
fi
if [ -n "$header" ]; then
  declared=$(grep -E '^DT_API ' "$header" | grep -oE 'dt_[a-z0-9_]+\(' | tr -d '(' | sort -u)
  absent=""
  for name in $declared; do
    printf '%s\n' "$symbols" | grep -qx "$name" || absent="$absent $name"
  done
  if [ -n "$absent" ]; then
    echo "FAIL: $lib does not export what $header declares:$absent"
    exit 1
  fi
fi
echo "OK: $count symbols, all dt_*"
