#!/usr/bin/env bash
# Builds disttrain on a machine with an NVIDIA GPU and runs what needs one:
# the gpu-labelled tests, then the GPU benchmarks beside PyTorch's.
# Meant for a lent GPU machine without a package registry: the packages it
# lacks come from scripts/gpu-bundle.sh (run where apt works) and are
# unpacked into a private prefix (DT_GPU_PREFIX, default
# /tmp/disttrain-gpu-root), so that the bundle itself stays small enough to
# travel.
#
#   scripts/gpu-check.sh [BUNDLE] [OUT]
#     BUNDLE  default build-gpu-bundle (holds debs/)
#     OUT     default $OUT, else build-gpu-check/out: logs and JSON lines
#
# Environment: DT_GPU_ARCH (default "native": only this GPU's architecture,
# the fastest build), DT_JOBS (default: all cores), DT_GPU_BENCH=0 to skip
# the benchmarks, DT_GPU_TESTS=0 to skip the tests, DT_GPU_BUILD_ALL=1 to build every target (by default only
# the library, the gpu-labelled tests and the GPU benchmarks: lent device time
# is short), DT_BENCH_TIMEOUT (default 90 s per benchmark run), DT_TEST_TIMEOUT
# (default 150 s per test).
set -uo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
bundle="$(cd "${1:-$repo/build-gpu-bundle}" && pwd)"
out="${2:-${OUT:-$repo/build-gpu-check/out}}"
build="$repo/build-gpu-check"
jobs="${DT_JOBS:-$(nproc)}"
mkdir -p "$out" "$build"
log() { echo "gpu-check: $*" | tee -a "$out/summary.txt"; }

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | tee "$out/gpu.txt"

# --- the bundle's packages, into a prefix --------------------------------
root="${DT_GPU_PREFIX:-/tmp/disttrain-gpu-root}"
if [ ! -d "$root/usr" ]; then
  mkdir -p "$root"
  for deb in "$bundle"/debs/*.deb; do dpkg-deb -x "$deb" "$root"; done
fi
multiarch="$root/usr/lib/x86_64-linux-gnu"
export PATH="$root/usr/bin:$PATH"
export LD_LIBRARY_PATH="$multiarch:$multiarch/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The tests read Fashion-MNIST from Debian's path.
if [ ! -e /usr/share/datasets/fashion-mnist ] && [ -d "$root/usr/share/datasets/fashion-mnist" ]; then
  mkdir -p /usr/share/datasets && ln -s "$root/usr/share/datasets/fashion-mnist" /usr/share/datasets/fashion-mnist
fi

# --- cuDNN and NCCL: the toolkit's, else the Python wheels' ---------------
# find_library wants the unversioned name, which wheels do not ship.
links="$build/links"
mkdir -p "$links/lib" "$links/include"
cuda_args=()
for lib in cudnn nccl; do
  header="$lib.h"
  [ -e "/usr/local/cuda/include/$header" ] && continue
  # nvidia.cudnn / nvidia.nccl are namespace packages: no __file__.
  pkgdir="$(python3 -c "import nvidia.$lib; print(list(nvidia.$lib.__path__)[0])" 2>/dev/null)"
  if [ -z "$pkgdir" ] || [ ! -e "$pkgdir/include/$header" ]; then
    # CUDA 13 wheels may lay out nvidia/cu13/{include,lib}: look for the header.
    found="$(python3 -c "import nvidia; print(chr(10).join(nvidia.__path__))" 2>/dev/null | xargs -r -I{} find {} -maxdepth 4 -name "$header" -path '*include*' 2>/dev/null | head -1)"
    [ -n "$found" ] && pkgdir="$(dirname "$(dirname "$found")")"
  fi
  if [ -n "$pkgdir" ] && [ -e "$pkgdir/include/$header" ]; then
    so="$(ls "$pkgdir"/lib/lib$lib.so* 2>/dev/null | head -1)"
    ln -sf "$so" "$links/lib/lib$lib.so"
    upper="$(echo "$lib" | tr a-z A-Z)"
    cuda_args+=("-DDT_${upper}_INCLUDE_DIR=$pkgdir/include" "-DDT_${upper}_LIBRARY=$links/lib/lib$lib.so")
    export LD_LIBRARY_PATH="$pkgdir/lib:$LD_LIBRARY_PATH"
    log "$lib from $pkgdir"
  else
    log "$lib: not found (its tests will report skipped or fail to configure)"
  fi
done

# --- configure and build ----------------------------------------------------
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$repo" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DDT_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="${DT_GPU_ARCH:-native}" -DDT_BUILD_BINDINGS=OFF \
  -DCMAKE_PREFIX_PATH="$root/usr;$multiarch/cmake" \
  -DDT_OPENBLAS_LIBRARY="$multiarch/openblas-pthread/libopenblas.so" \
  -DDT_CBLAS_INCLUDE_DIR="$root/usr/include/x86_64-linux-gnu/openblas-pthread" \
  -DDT_FLATC="$root/usr/bin/flatc" \
  "${cuda_args[@]}" >"$out/configure.log" 2>&1 || { log "configure failed"; tail -30 "$out/configure.log"; exit 1; }
grep -E "CUDA|cuDNN|NCCL|oneDNN" "$out/configure.log" | tee -a "$out/summary.txt"
targets=()
if [ "${DT_GPU_BUILD_ALL:-0}" != "1" ]; then
  # ctest -N names each gpu test, and each test is named after its target,
  # but for example_train_gpus, which runs the C examples.
  mapfile -t targets < <(cd "$build" && ctest -L gpu -N | awk '/Test +#/ && $3 !~ /^example_/ {print $3}')
  targets=(--target disttrain disttrain_static nn_throughput hello_ndarray train_fashion_mnist train_image_classifier
           "${targets[@]}")
fi
start=$(date +%s)
# Keep going past a failing test target: the others' results still count.
keep_going=(-k); [ "${#generator[@]}" -gt 0 ] && keep_going=(-k 0)
cmake --build "$build" -j"$jobs" "${targets[@]}" -- "${keep_going[@]}" >"$out/build.log" 2>&1 || {
  log "build failed"; grep -E "error|FAILED" "$out/build.log" | head -40
  [ -e "$build/src/libdisttrain.so" ] || [ -n "$(find "$build" -name 'libdisttrain.so*' -print -quit)" ] || exit 1; }
if [ "${#targets[@]}" -gt 0 ]; then
  # Built only with NCCL; its absence is reported below, not fatal here.
  cmake --build "$build" -j"$jobs" --target allreduce_bench >>"$out/build.log" 2>&1 || log "allreduce_bench not built (NCCL?)"
fi
log "built in $(( $(date +%s) - start )) s"
"$repo/scripts/gpu-check-examples.sh" "$build" "$out" "$jobs"  # dtrun for example_gpu_kvstores; time to accuracy

# --- the GPU tests ----------------------------------------------------------
# -V keeps every test's own output: a test that skips a case inside a binary
# (GTEST_SKIP, e.g. "needs 2 GPUs") passes as a whole in CTest's eyes, and
# only gtest's lines say which cases did not run.
if [ "${DT_GPU_TESTS:-1}" != "0" ]; then
(cd "$build" && ctest -L gpu -V --timeout "${DT_TEST_TIMEOUT:-150}") >"$out/gpu-tests.log" 2>&1
log "gpu tests: exit $? ($(grep -E 'tests passed|tests failed' "$out/gpu-tests.log"))"
grep -E "Test +#.*(Passed|Failed|Skipped|\*\*\*)" "$out/gpu-tests.log" | tee -a "$out/summary.txt"
grep -E "^[0-9]+: \[ +(SKIPPED|FAILED) +\] [A-Za-z]" "$out/gpu-tests.log" | sort -u | tee -a "$out/summary.txt"
fi

# --- benchmarks, disttrain then PyTorch, in one session ----------------------
if [ "${DT_GPU_BENCH:-1}" != "0" ]; then
  bt="${DT_BENCH_TIMEOUT:-90}"
  for precision in fp32 fp16 bf16; do
    timeout "$bt" "$build/bench/nn_throughput" --device gpu --precision "$precision" --json "$out/nn_throughput.jsonl" \
      2>>"$out/bench.log" | tee -a "$out/bench.log"
    timeout "$bt" python3 "$repo/bench/peers/torch_nn_throughput.py" --device gpu --precision "$precision" \
      2>>"$out/bench.log" | tee -a "$out/torch_nn_throughput.jsonl"
  done
  # Input that keeps the GPU busy: ResNet-18 (batch 128, bf16) fed by the
  # CIFAR loader with crop + flip, staged onto the device while the step
  # before computes, against the synthetic-batch bf16 line above; the goal
  # is a ratio of at least 0.9. 5 x 1024 training images: 40 batches an epoch.
  cifar="$build/cifar-synthetic"
  [ -e "$cifar/data_batch_5.bin" ] || { mkdir -p "$cifar" && python3 "$repo/tests/examples/write_synthetic_cifar.py" "$cifar" 1024; }
  timeout "$bt" "$build/bench/nn_throughput" --device gpu --precision bf16 --model resnet18 --cifar "$cifar" \
    --json "$out/nn_throughput.jsonl" 2>>"$out/bench.log" | tee -a "$out/bench.log"
  python3 - "$out/nn_throughput.jsonl" <<'RATIO' | tee -a "$out/summary.txt"
import json, sys
rate = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("model") == "resnet18" and r.get("precision") == "bf16":
        rate[r.get("input", "synthetic")] = r["images_per_s"]
if len(rate) == 2:
    print("gpu-check: resnet18 bf16 b128 cifar-loader/synthetic = %.3f (%.0f vs %.0f images/s; goal >= 0.9)"
          % (rate["cifar-loader"] / rate["synthetic"], rate["cifar-loader"], rate["synthetic"]))
else:
    print("gpu-check: resnet18 bf16 loader ratio not measured (lines: %s)" % sorted(rate))
RATIO
  [ -x "$build/bench/allreduce_bench" ] && timeout "$bt" "$build/bench/allreduce_bench" --max-bytes 268435456 \
    2>>"$out/bench.log" | tee "$out/allreduce_bench.jsonl"
fi
log "done; results in $out"
