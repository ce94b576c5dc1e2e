#!/usr/bin/env bash
# Configures and builds disttrain into BUILD_DIR (default: build/). Extra
# arguments go to cmake's configure step, e.g. -DDT_WITH_CUDA=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${BUILD_DIR:-build}"
jobs="${DT_JOBS:-$(nproc 2>/dev/null || echo 2)}"
cmake -S . -B "$build_dir" "$@"
cmake --build "$build_dir" -j "$jobs"
