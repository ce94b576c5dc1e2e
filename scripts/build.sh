#!/usr/bin/env bash
# Configures and builds disttrain into BUILD_DIR (default: build/).
#
#   scripts/build.sh [--main-job] [cmake configure args, e.g. -DDT_WITH_CUDA=OFF]
#
# Without --main-job: everything the options ask for (tests, benchmarks and
# examples on; bindings as the cache or the arguments say).
# --main-job: only what scripts/demo.sh runs, the library, dtrun, dt-node and
# the C example; tests, benchmarks and bindings are not configured, so their
# packages (install-deps.sh --tests) are not needed. Both modes share the
# library's objects in the same BUILD_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${BUILD_DIR:-build}"
jobs="${DT_JOBS:-$(nproc 2>/dev/null || echo 2)}"

if [ "${1:-}" = "--main-job" ]; then
  shift
  configure=(-DDT_BUILD_TESTS=OFF -DDT_BUILD_BENCH=OFF -DDT_BUILD_BINDINGS=OFF -DDT_BUILD_EXAMPLES=ON)
  targets=(--target disttrain dtrun dt-node train_fashion_mnist)
else
  configure=(-DDT_BUILD_TESTS=ON -DDT_BUILD_BENCH=ON -DDT_BUILD_EXAMPLES=ON)
  targets=()
fi

# Ask CMake's file API which files configure reads (the package config files
# it loads), for scripts/check-deps.py.
mkdir -p "$build_dir/.cmake/api/v1/query"
touch "$build_dir/.cmake/api/v1/query/cmakeFiles-v1"

cmake -S . -B "$build_dir" "${configure[@]}" "$@"
cmake --build "$build_dir" -j "$jobs" "${targets[@]}"
