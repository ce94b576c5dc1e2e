#!/bin/sh
# The shared library must export the C API (dt_*) and nothing else.
set -eu
lib="$1"
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
echo "OK: $count symbols, all dt_*"
