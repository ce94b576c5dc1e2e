#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang and runs each over its seed
# corpus (fuzz/corpus/<name>/) for a bounded time, one after the other.
#
#   scripts/fuzz.sh [BUILD_DIR]          default BUILD_DIR: build-fuzz
#
#   DT_FUZZ_SECONDS   seconds per target (default 20; 600 for a long run)
#   DT_FUZZ_TARGETS   space-separated names to run (default: every target),
#                     e.g. "ps_frame safetensors"
#   DT_FUZZ_JOBS      parallel build jobs (default 2)
#
# New inputs go to a temporary folder that is removed at the end, never into
# the repository. A crash, sanitizer report, timeout (-timeout=10) or memory
# blow-up (-rss_limit_mb=2048) keeps its input in BUILD_DIR/fuzz-artifacts/,
# and the script exits non-zero after the remaining targets ran. One JSON line
# per target on stdout:
#   {"target":..,"runs":..,"seconds":..,"coverage":..,"features":..,"crashes":..}
# (coverage and features: libFuzzer's final "cov:" and "ft:" counts).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build-fuzz}"
seconds="${DT_FUZZ_SECONDS:-20}"
jobs="${DT_FUZZ_JOBS:-2}"
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "DT_FUZZ_SECONDS must be a positive whole number, not '$seconds'" >&2
  exit 2
fi

# Only the fuzz targets are built: the library itself stays with the
# ordinary (gcc) build, so tests, examples and benchmarks are off here.
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DDT_BUILD_FUZZERS=ON \
  -DDT_BUILD_TESTS=OFF -DDT_BUILD_EXAMPLES=OFF -DDT_BUILD_BENCH=OFF -DDT_WITH_CUDA=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target dt_fuzzers -j "$jobs" >&2

if [[ -n "${DT_FUZZ_TARGETS:-}" ]]; then
  read -r -a targets <<<"$DT_FUZZ_TARGETS"
else
  targets=()
  for source in "$root"/fuzz/*_fuzzer.cc; do
    name="$(basename "$source" _fuzzer.cc)"
    targets+=("$name")
  done
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"

failed=0
for name in "${targets[@]}"; do
  binary="$build/fuzz/${name}_fuzzer"
  seeds="$root/fuzz/corpus/$name"
  if [[ ! -x "$binary" || ! -d "$seeds" ]]; then
    echo "fuzz: no target or no seed corpus named '$name'" >&2
    failed=1
    continue
  fi
  mkdir -p "$work/$name"
  log="$work/$name.log"
  started=$SECONDS
  status=0
  # The new-inputs folder comes first: libFuzzer writes what it finds there.
  "$binary" "$work/$name" "$seeds" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$artifacts/$name-" >"$log" 2>&1 || status=$?
  elapsed=$((SECONDS - started))
  # The final stats, and the last status line ("#N DONE cov: C ft: F ...", or
  # the last "#N ..." before a crash); none at all when a seed crashes.
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
  cov="$(sed -n 's/.* cov: \([0-9]*\) .*/\1/p' "$log" | tail -n 1)"
  ft="$(sed -n 's/.* ft: \([0-9]*\) .*/\1/p' "$log" | tail -n 1)"
  crashes=0
  if [[ $status -ne 0 ]]; then
    crashes=1
    failed=1
    {
      echo "fuzz: $name failed (exit $status); its log ends:"
      tail -n 60 "$log"
      echo "fuzz: the input is under $artifacts/"
    } >&2
  fi
  printf '{"target":"%s","runs":%s,"seconds":%s,"coverage":%s,"features":%s,"crashes":%s}\n' \
    "$name" "${runs:-0}" "$elapsed" "${cov:-0}" "${ft:-0}" "$crashes"
done
exit $failed
