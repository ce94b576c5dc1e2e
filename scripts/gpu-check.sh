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
# DT_GPU_CHECK picks what runs, a comma-separated list (default "all"):
#   tests    the gpu-labelled tests
#   speed    issue 38's single-GPU comparison, ours beside tuned PyTorch in
#            alternated pairs (DT_GPU_REPS each, default 3): ResNet-18 batch
#            128 and 256 and LeNet batch 64, in fp32, fp16 and bf16, with the
#            peak memory of each run (the allocator's own counts beside
#            torch.cuda.max_memory_allocated). PyTorch is tuned as its users
#            run it: cudnn.benchmark, channels_last in fp16/bf16, and for
#            LeNet also torch.compile(mode="reduce-overhead") (one compile per
#            precision, DT_GPU_REPS timed windows); ours again for ResNet-18
#            batch 128 with DT_CONV_LAYOUT=NHWC. About 8 minutes on an H200.
#   compile  ResNet-18 under torch.compile (default mode) too, so that the
#            ratio is taken to compiled PyTorch where compiling wins: six
#            compiles, several minutes; off unless named (or "all").
#   dist     two processes on the one GPU (dist_sync_device, allreduce) beside
#            DDP over gloo with two processes, and dist_nccl with one rank
#            beside no store; ResNet-18 batch 128 fp32. About 2 minutes.
#   kernels  allreduce_bench (NCCL), as before.
#   all      every one of these.
# For a 15-minute lease: DT_GPU_CHECK=speed,dist (the build, then about 9
# minutes). Each part writes JSON lines; scripts/gpu-ratios.py prints the
# ratios to issue 38's targets at the end (ratios.txt).
#
# Environment: DT_GPU_ARCH (default "native": only this GPU's architecture,
# the fastest build), DT_JOBS (default: all cores), DT_GPU_BENCH=0 to skip
# the benchmarks, DT_GPU_TESTS=0 to skip the tests, DT_GPU_BUILD_ALL=1 to build every target (by default only
# the library, what the chosen parts run: lent device time
# is short), DT_BENCH_TIMEOUT (default 90 s per benchmark run, 300 s for a
# compiled PyTorch run), DT_TEST_TIMEOUT (default 150 s per test).
set -uo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
bundle="$(cd "${1:-$repo/build-gpu-bundle}" && pwd)"
out="${2:-${OUT:-$repo/build-gpu-check/out}}"
build="$repo/build-gpu-check"
jobs="${DT_JOBS:-$(nproc)}"
mkdir -p "$out" "$build"
log() { echo "gpu-check: $*" | tee -a "$out/summary.txt"; }
parts=",${DT_GPU_CHECK:-all},"
[ "${DT_GPU_TESTS:-1}" = "0" ] && parts="${parts//,tests,/,}"
wants() { [[ "$parts" == *",all,"* && "$1" != "none" ]] || [[ "$parts" == *",$1,"* ]]; }
if [ "${DT_GPU_BENCH:-1}" = "0" ]; then
  wants tests && parts=",tests," || parts=",none,"
fi
log "parts: ${parts//,/ }"

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
  targets=(--target disttrain nn_throughput)
  if wants tests; then
    mapfile -t test_targets < <(cd "$build" && ctest -L gpu -N | awk '/Test +#/ && $3 !~ /^example_/ {print $3}')
    targets+=(disttrain_static hello_ndarray train_fashion_mnist train_image_classifier "${test_targets[@]}")
  fi
  wants dist && targets+=(dtrun dt-node)
fi
start=$(date +%s)
# Keep going past a failing test target: the others' results still count.
keep_going=(-k); [ "${#generator[@]}" -gt 0 ] && keep_going=(-k 0)
cmake --build "$build" -j"$jobs" "${targets[@]}" -- "${keep_going[@]}" >"$out/build.log" 2>&1 || {
  log "build failed"; grep -E "error|FAILED" "$out/build.log" | head -40
  [ -e "$build/src/libdisttrain.so" ] || [ -n "$(find "$build" -name 'libdisttrain.so*' -print -quit)" ] || exit 1; }
if [ "${#targets[@]}" -gt 0 ] && wants kernels; then
  # Built only with NCCL; its absence is reported below, not fatal here.
  cmake --build "$build" -j"$jobs" --target allreduce_bench >>"$out/build.log" 2>&1 || log "allreduce_bench not built (NCCL?)"
fi
log "built in $(( $(date +%s) - start )) s"
"$repo/scripts/gpu-check-examples.sh" "$build" "$out" "$jobs"  # dtrun for example_gpu_kvstores; time to accuracy

# --- the GPU tests ----------------------------------------------------------
# -V keeps every test's own output: a test that skips a case inside a binary
# (GTEST_SKIP, e.g. "needs 2 GPUs") passes as a whole in CTest's eyes, and
# only gtest's lines say which cases did not run.
if wants tests; then
(cd "$build" && ctest -L gpu -V --timeout "${DT_TEST_TIMEOUT:-150}") >"$out/gpu-tests.log" 2>&1
log "gpu tests: exit $? ($(grep -E 'tests passed|tests failed' "$out/gpu-tests.log"))"
grep -E "Test +#.*(Passed|Failed|Skipped|\*\*\*)" "$out/gpu-tests.log" | tee -a "$out/summary.txt"
grep -E "^[0-9]+: \[ +(SKIPPED|FAILED) +\] [A-Za-z]" "$out/gpu-tests.log" | sort -u | tee -a "$out/summary.txt"
fi

# --- benchmarks: disttrain and PyTorch in alternated pairs, one session ------
# Each run appends its JSON line(s) to one file per part; the log keeps
# stderr. A run that fails or times out leaves its line out, and the ratio
# table shows a dash for it.
bt="${DT_BENCH_TIMEOUT:-90}"
reps="${DT_GPU_REPS:-3}"
nn="$build/bench/nn_throughput"
peer="$repo/bench/peers/torch_nn_throughput.py"
ours() { timeout "$bt" "$nn" --device gpu "$@" 2>>"$out/bench.log" | tee -a "$jsonl"; }
torch_run() { timeout "${torch_timeout:-$bt}" python3 "$peer" --device gpu "$@" 2>>"$out/bench.log" | tee -a "$jsonl"; }

if wants speed; then
  jsonl="$out/speed.jsonl"
  start=$(date +%s)
  # Ours searches cuDNN's convolution algorithms per shape unless this is 0
  # (docs/gpu.md); tuned PyTorch runs with cudnn.benchmark = True.
  log "speed: MXNET_CUDNN_AUTOTUNE_DEFAULT=${MXNET_CUDNN_AUTOTUNE_DEFAULT:-1 (unset: the default)}"
  for batch in 128 256; do
    for precision in fp32 fp16 bf16; do
      for rep in $(seq "$reps"); do
        ours --model resnet18 --batch "$batch" --precision "$precision"
        torch_run --model resnet18 --batch "$batch" --precision "$precision" --tuned
      done
    done
  done
  # The same ResNet-18 rows with the net's 4-d part in NHWC (docs/gpu.md,
  # "Activation layout"): the default stays NCHW until these are read.
  for precision in fp32 fp16 bf16; do
    for rep in $(seq "$reps"); do
      DT_CONV_LAYOUT=NHWC ours --model resnet18 --batch 128 --precision "$precision"
    done
  done
  for precision in fp32 fp16 bf16; do
    for rep in $(seq "$reps"); do
      ours --model lenet --batch 64 --precision "$precision"
      torch_run --model lenet --batch 64 --precision "$precision" --tuned
    done
    # CUDA graphs for LeNet's launch-bound step: one compile, $reps windows.
    torch_timeout=300 torch_run --model lenet --batch 64 --precision "$precision" --tuned \
      --compile reduce-overhead --repeat "$reps"
  done
  # Input that keeps the GPU busy: ResNet-18 (batch 128, bf16) fed by the
  # CIFAR loader with crop + flip, staged onto the device while the step
  # before computes, against the synthetic-batch bf16 lines above; the goal
  # is a ratio of at least 0.9. 5 x 1024 training images: 40 batches an epoch.
  cifar="$build/cifar-synthetic"
  [ -e "$cifar/data_batch_5.bin" ] || { mkdir -p "$cifar" && python3 "$repo/tests/examples/write_synthetic_cifar.py" "$cifar" 1024; }
  ours --precision bf16 --model resnet18 --cifar "$cifar"
  python3 - "$jsonl" <<'RATIO' | tee -a "$out/summary.txt"
import json, sys
rates = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("model") == "resnet18" and r.get("precision") == "bf16" and r.get("batch") == 128 and "input" in r:
        rates.setdefault(r["input"], []).append(r["images_per_s"])
if "cifar-loader" in rates and "synthetic" in rates:
    loader = sum(rates["cifar-loader"]) / len(rates["cifar-loader"])
    synthetic = sum(rates["synthetic"]) / len(rates["synthetic"])
    print("gpu-check: resnet18 bf16 b128 cifar-loader/synthetic = %.3f (%.0f vs %.0f images/s; goal >= 0.9)"
          % (loader / synthetic, loader, synthetic))
else:
    print("gpu-check: resnet18 bf16 loader ratio not measured (lines: %s)" % sorted(rates))
RATIO
  log "speed: $(wc -l <"$jsonl") lines in $(( $(date +%s) - start )) s"
fi

if wants compile; then
  jsonl="$out/speed.jsonl"
  start=$(date +%s)
  for batch in 128 256; do
    for precision in fp32 fp16 bf16; do
      torch_timeout=400 torch_run --model resnet18 --batch "$batch" --precision "$precision" --tuned \
        --compile default --repeat "$reps"
    done
  done
  log "compile: $(( $(date +%s) - start )) s"
fi

if wants dist; then
  jsonl="$out/dist.jsonl"
  start=$(date +%s)
  dtrun=("$build/dtrun" --timeout "$bt")
  # Two workers on GPU 0, each with its own batch of 128; dist_sync_device
  # with one server. Rank 0's line counts (gpu-ratios.py).
  for rep in $(seq "$reps"); do
    "${dtrun[@]}" -n 2 -s 1 -- "$nn" --device gpu --model resnet18 --steps 50 --kvstore dist_sync_device \
      2>>"$out/bench.log" | tee -a "$jsonl"
    "${dtrun[@]}" -n 2 -s 0 -- "$nn" --device gpu --model resnet18 --steps 50 --kvstore allreduce \
      2>>"$out/bench.log" | tee -a "$jsonl"
    torch_run --model resnet18 --steps 50 --ddp 2 --tuned
  done
  # dist_nccl with one rank against the same step without a store.
  for rep in $(seq "$reps"); do
    "${dtrun[@]}" -n 1 -s 0 -- "$nn" --device gpu --model resnet18 --kvstore dist_nccl \
      2>>"$out/bench.log" | tee -a "$jsonl"
    ours --model resnet18
  done
  log "dist: $(wc -l <"$jsonl") lines in $(( $(date +%s) - start )) s"
fi

if wants kernels && [ -x "$build/bench/allreduce_bench" ]; then
  timeout "$bt" "$build/bench/allreduce_bench" --max-bytes 268435456 2>>"$out/bench.log" | tee "$out/allreduce_bench.jsonl"
fi

if [ -e "$out/speed.jsonl" ] || [ -e "$out/dist.jsonl" ]; then
  python3 "$repo/scripts/gpu-ratios.py" "$out/speed.jsonl" "$out/dist.jsonl" | tee "$out/ratios.txt"
fi
log "done; results in $out"
