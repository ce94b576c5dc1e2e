#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs the C example that
# exercises the C API (arrays, arithmetic, safetensors, build info).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
BUILD_DIR=build scripts/build.sh >/dev/null
out_dir=$(mktemp -d "${TMPDIR:-/tmp}/disttrain-demo.XXXXXX")
trap 'rm -rf "$out_dir"' EXIT
build/examples/hello_ndarray "$out_dir/hello.safetensors"
