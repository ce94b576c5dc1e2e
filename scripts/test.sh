#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite; exits
# non-zero on any failure. First, scripts/check-deps.py proves that every file
# the builds use comes from a package scripts/install-deps.sh installs (the
# main job's build against its own list, the full build against --tests), so
# that a machine set up by hand cannot hide a missing install step. Then two
# configurations:
#   build/       the default build (CUDA when the toolkit is present): all tests
#   build-asan/  no CUDA, AddressSanitizer + UndefinedBehaviorSanitizer: the
#                unit, C API, example and hostile-peer tests except the full
#                training runs, which take minutes under ASan (this also
#                proves a CUDA-less build works)
# and last, build-fuzz/: clang's libFuzzer targets over every parser that
# takes bytes from outside (fuzz/), DT_FUZZ_SECONDS each (default 10).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --tests

jobs="${DT_JOBS:-$(nproc 2>/dev/null || echo 2)}"
status=0
# Tests run side by side on few cores: OpenMP threads that spin at barriers
# while a descheduled peer holds them up make oneDNN kernels up to 20x
# slower; passive waiting yields the core instead. libgomp reads this only
# at load time, so it has to come from the environment.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"

echo "== the main job's build (scripts/demo.sh's) and where its files come from"
BUILD_DIR=build scripts/build.sh --main-job
scripts/check-deps.py build || status=1

echo "== default build"
BUILD_DIR=build scripts/build.sh -DDT_BUILD_BINDINGS=ON
scripts/check-deps.py build --tests || status=1
(cd build && ctest --output-on-failure -j "$jobs" --timeout 600) || status=1

echo "== sanitizer build (address, undefined; no CUDA)"
BUILD_DIR=build-asan scripts/build.sh -DDT_WITH_CUDA=OFF -DDT_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=Debug
scripts/check-deps.py build-asan --tests || status=1
# detect_leaks: every handle the tests create must be freed.
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --output-on-failure -j "$jobs" --timeout 900 -L 'unit|capi|example|hostile' -LE training) || status=1

echo "== libFuzzer targets over every parser (clang; fuzz/), each for a bounded time"
DT_FUZZ_SECONDS="${DT_FUZZ_SECONDS:-10}" scripts/fuzz.sh build-fuzz || status=1

if [ $status -ne 0 ]; then
  echo "test.sh: FAILED"
else
  echo "test.sh: all tests passed"
fi
exit $status
