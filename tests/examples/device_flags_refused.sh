#!/bin/sh
# The device flags of a training example (--gpus, --cpus, --precision) refuse
# what cannot run with exit status 2 and a message, before any data is read:
# a GPU the machine lacks (named, with the count found), a malformed --gpus
# list, --cpus with --gpus, fp16 on the CPU. On a machine without a GPU,
# --gpus 0 itself must be refused that way, never run on the CPU instead.
#
#   device_flags_refused.sh command [args...]
set -eu
work=$(mktemp -d "${TMPDIR:-/tmp}/dt-device-flags.XXXXXX")
trap 'rm -rf "$work"' EXIT
failed=0

# refused PATTERN FLAGS...: the command with FLAGS exits 2 within 60 s and
# its output matches PATTERN (a grep -E expression).
refused() {
  pattern="$1"
  shift
  status=0
  timeout 60 "$@" > "$work/out" 2>&1 || status=$?
  if [ "$status" -ne 2 ] || ! grep -Eq -- "$pattern" "$work/out"; then
    echo "FAIL: $* exited with $status (want 2) and printed:"
    cat "$work/out"
    echo "(expected a line matching: $pattern)"
    failed=1
    return
  fi
  grep -q 'test_accuracy\|^epoch ' "$work/out" && { echo "FAIL: $* trained before refusing"; failed=1; return; }
  echo "ok: $* -> exit 2: $(grep -E -- "$pattern" "$work/out" | head -n 1)"
}

gpus=0
if command -v nvidia-smi > /dev/null 2>&1; then
  gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU ' || true)
fi
if [ "$gpus" -eq 0 ]; then
  refused '--gpus: GPU 0 was asked for, but this machine has 0 GPU\(s\)' "$@" --gpus 0
  refused '--gpus: GPU 0 was asked for, but this machine has 0 GPU\(s\)' "$@" --gpus 0,0
  refused '--gpus: GPU 0 was asked for, but this machine has 0 GPU\(s\)' "$@" --gpus local
fi
refused '--gpus: GPU 77 was asked for, but this machine has [0-9]+ GPU\(s\)' "$@" --gpus 77
if [ "$gpus" -gt 0 ]; then
  refused "--gpus: GPU 77 was asked for, but this machine has $gpus GPU\\(s\\)" "$@" --gpus 0,77
fi
for bad in x 0,x 0, ,0 0,,1 -1 +1 '0 ,1' 1.5; do
  refused '--gpus takes GPU ids' "$@" --gpus "$bad"
done
refused '--cpus and --gpus exclude each other' "$@" --gpus 0 --cpus 2
refused '--cpus must be at least 1' "$@" --cpus 0
refused '--precision must be fp32, fp16 or bf16' "$@" --precision fp8
refused '--precision fp16: the CPU computes in fp32 only' "$@" --precision fp16
refused '--precision bf16: the CPU computes in fp32 only' "$@" --cpus 2 --precision bf16
[ "$failed" -eq 0 ] || exit 1
echo "OK: every device flag that cannot run was refused with exit status 2"
