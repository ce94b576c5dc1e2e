#!/usr/bin/env bash
# Installs, with apt-get, every Debian package that building and running
# disttrain's main job needs (scripts/demo.sh); with --tests, also what the
# whole test suite needs (GoogleTest, the binding toolchains, Open MPI, sshd);
# with --bench, also the peers that bench/ compares against (PyTorch, whose
# gloo backend bench/peers/torch_allreduce_bench.py runs).
#
#   scripts/install-deps.sh [--tests] [--bench]          install what is missing
#   scripts/install-deps.sh [--tests] [--bench] --list   print the package names, one a line
#
# apt-get runs with --no-install-recommends, so this list is the whole truth:
# a package that the build or the tests use must be named here (or be a
# Depends/Pre-Depends of one named here), even where another package only
# recommends it. scripts/check-deps.py, run by scripts/test.sh, fails when
# CMake or the linker finds a file from a package outside that closure.
#
# (scripts/fresh-machine.sh installs debootstrap for itself: it makes the
# fresh root that proves this list, and is no part of the build or the tests.)
#
# Idempotent: packages already present are left alone, and apt-get runs only
# when something is missing. Run as root (or with sudo available).
set -euo pipefail

tests=false
bench=false
list=false
for arg in "$@"; do
  case "$arg" in
    --tests) tests=true ;;
    --bench) bench=true ;;
    --list) list=true ;;
    *) echo "usage: scripts/install-deps.sh [--tests] [--bench] [--list]" >&2; exit 2 ;;
  esac
done

# The main job: the library, dtrun, dt-node and the C example, and its data.
packages=(
  build-essential cmake pkg-config
  nlohmann-json3-dev zlib1g-dev
  # the image-folder dataset's JPEG and PNG decoders (src/data/image_decode.h)
  libjpeg62-turbo-dev libpng-dev
  # libdnnl-dev's CMake config calls find_package(OpenCL), whose headers and
  # libOpenCL.so Debian's libdnnl-dev only recommends.
  libdnnl-dev ocl-icd-opencl-dev libopenblas-dev
  libnng-dev libflatbuffers-dev flatbuffers-compiler
  # the job secret's HMAC-SHA256 and nonces (src/net/hmac.h): the
  # crypto library of the mbedTLS that nng is built with
  libmbedtls-dev
  # dtrun --tls: a throw-away CA and certificate per job (tools/dtrun/job_tls.h)
  openssl
  dataset-fashion-mnist
  # scripts/plot-metrics: the demo's training-curve PNG (depends on python3)
  python3-matplotlib
)
if $tests; then
  packages+=(
    # GoogleTest (its CMake config loads GMock's, which libgtest-dev only
    # recommends); Debian's python3 for the independent safetensors reader
    # and for scripts/check-deps.py
    libgtest-dev libgmock-dev python3
    # tests/tools/write_recordio.py: the RecordIO test sets' JPEG and PNG
    # payloads (Pillow; matplotlib depends on it too, but the tests name it)
    python3-pil
    # bindings (the tests build and run all three languages; JUnit 5's console
    # launcher runs the Java tests; junit5 depends on junit4, which nothing
    # of ours uses)
    swig default-jdk-headless junit5 scala golang-go
    # the Maven artifacts (bindings/maven) and their consumer test: Debian's
    # maven and the plugins its jar lifecycle runs, offline from
    # /usr/share/maven-repo
    maven libmaven-compiler-plugin-java libmaven-resources-plugin-java
    libmaven-jar-plugin-java libmaven-install-plugin-java libmaven-source-plugin-java
    libmaven-javadoc-plugin-java libsurefire-java
    # dtrun's launchers: mpirun, and ssh/rsync between namespace "hosts"
    openmpi-bin libopenmpi-dev openssh-server openssh-client rsync iproute2
    # scripts/fuzz.sh: clang with libFuzzer and the sanitizer runtimes; the
    # clang configure's find_package(OpenMP) needs LLVM's libomp
    clang libclang-rt-14-dev libomp-14-dev
  )
fi
if $bench; then
  packages+=(
    # the peer bench/peers/torch_allreduce_bench.py measures against:
    # torch.distributed's gloo backend (python3-torch depends on python3)
    python3-torch
  )
fi

if $list; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
