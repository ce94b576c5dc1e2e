#!/bin/sh
# The --gpus, --cpus and --precision flags of the C training examples
# (examples/c/device_flags.c) where they must refuse: a GPU this machine does
# not have (GPU <count>, and GPU 0 when there is none) exits 2 at once with
# "--gpus: GPU N was asked for, but this machine has M GPU(s)", before any
# data is read; malformed lists, --cpus with --gpus, --cpus 0 and an unknown
# precision are usage errors (2); 16-bit precision on the CPU exits 2
# naming the flag. The GPU count comes from hello_ndarray, independently of
# the code under test. Under dtrun, --gpus local is each worker's local rank:
# with more workers than GPUs, a worker beyond them names its own rank.
#   device_flags.sh HELLO_NDARRAY TRAIN_FASHION_MNIST TRAIN_IMAGE_CLASSIFIER DTRUN
set -eu
hello="$1"
fashion="$2"
image="$3"
dtrun="$4"
work=$(mktemp -d "${TMPDIR:-/tmp}/dt-device-flags.XXXXXX")
trap 'rm -rf "$work"' EXIT

gpus=$("$(dirname "$0")/visible_gpus.sh" "$hello") || { echo "FAIL: no GPU count"; exit 1; }
echo "GPUs visible: $gpus"

failures=0
# expect STATUS PATTERN COMMAND...: COMMAND exits STATUS and its stderr has
# a line matching the grep -E PATTERN.
expect() {
  want="$1"
  pattern="$2"
  shift 2
  status=0
  "$@" > "$work/out" 2> "$work/err" || status=$?
  if [ "$status" -ne "$want" ] || ! grep -Eq -- "$pattern" "$work/err"; then
    echo "FAIL: $* exited $status (want $want) with stderr:"
    cat "$work/err"
    failures=$((failures + 1))
  else
    echo "ok ($status): $*"
  fi
}

# The image classifier's --data does not exist: the devices must be refused
# before the data is looked at (it would exit 1 there).
for example in "$fashion" "$image --data $work/no-such-cifar"; do
  # shellcheck disable=SC2086
  set -- $example
  expect 2 "^--gpus: GPU $gpus was asked for, but this machine has $gpus GPU\\(s\\)$" "$@" --gpus "$gpus" --epochs 0
  expect 2 "^--gpus: GPU $gpus was asked for, but this machine has $gpus GPU\\(s\\)$" "$@" --gpus "0,$gpus" --epochs 0
  if [ "$gpus" -eq 0 ]; then # then the line above was --gpus 0
    expect 2 '^--gpus: GPU 0 was asked for, but this machine has 0 GPU\(s\)$' "$@" --gpus 0,0 --epochs 0
  fi
  expect 2 "^--gpus: GPU $gpus was asked for, but this machine has $gpus GPU\\(s\\)$" \
    env DT_LOCAL_RANK="$gpus" DT_LOCAL_SIZE=$((gpus + 1)) "$@" --gpus local --epochs 0
  for bad in '0,,1' '-1' 'x' '0,' ',0' '+1' '1 ' 'local,0' '99999999999999999999'; do
    expect 2 "^error: --gpus '.*' is not a GPU id" "$@" --gpus "$bad" --epochs 0
  done
  expect 2 '^error: --cpus and --gpus do not go together' "$@" --cpus 2 --gpus 0 --epochs 0
  expect 2 "^error: --cpus '0'" "$@" --cpus 0 --epochs 0
  expect 2 "^error: --cpus 'two'" "$@" --cpus two --epochs 0
  expect 2 "^error: --precision 'fp8'" "$@" --precision fp8 --epochs 0
  for precision in bf16 fp16; do
    expect 2 "^error: --precision $precision: .*GPU" "$@" --precision "$precision" --epochs 0
    expect 2 "^error: --precision $precision: .*GPU" "$@" --gpus '' --precision "$precision" --epochs 0
  done
done

# Two workers more than GPUs, without servers: the workers beyond the GPUs
# fail at once (whichever dtrun hears of first ends the job).
if "$dtrun" -n $((gpus + 2)) -s 0 --timeout 60 -- "$fashion" --gpus local --kvstore allreduce --epochs 0 \
  > "$work/job.log" 2>&1; then
  cat "$work/job.log"
  echo "FAIL: a job with more workers than GPUs trained with --gpus local"
  failures=$((failures + 1))
elif ! grep -Eq "^\[worker ([0-9]+)\] --gpus: GPU \1 was asked for, but this machine has $gpus GPU\(s\)$" "$work/job.log" ||
  grep -E "^\[worker [0-9]+\] --gpus: GPU" "$work/job.log" |
    grep -Evq "^\[worker ([0-9]+)\] --gpus: GPU \1 was asked for"; then
  cat "$work/job.log"
  echo "FAIL: --gpus local under dtrun did not name each worker's local rank"
  failures=$((failures + 1))
else
  echo "ok: --gpus local under dtrun: $(grep -E '^\[worker [0-9]+\] --gpus: GPU' "$work/job.log" | head -1)"
fi

[ "$failures" -eq 0 ] || { echo "FAIL: $failures check(s) failed"; exit 1; }
echo "OK: both examples refuse missing GPUs, malformed device flags and 16 bits on the CPU with status 2"
