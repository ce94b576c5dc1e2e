#!/bin/sh
# Prints how many GPUs the library sees, as hello_ndarray reports it
# ("GPUs visible: N"): the example tests' count, taken apart from the code
# they test. Exits 1 when hello_ndarray does not say.
#   visible_gpus.sh HELLO_NDARRAY
set -eu
work=$(mktemp -d "${TMPDIR:-/tmp}/dt-visible-gpus.XXXXXX")
trap 'rm -rf "$work"' EXIT
count=$("$1" "$work/hello.safetensors" | sed -n 's/.*GPUs visible: \([0-9][0-9]*\)$/\1/p')
[ -n "$count" ] || { echo "hello_ndarray did not say how many GPUs are visible" >&2; exit 1; }
echo "$count"
