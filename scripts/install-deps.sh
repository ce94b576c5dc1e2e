#!/usr/bin/env bash
# Installs, with apt-get, what building disttrain needs; with --tests, also
# what the whole test suite needs (the binding toolchains, Open MPI, sshd).
# Idempotent: packages already present are left alone, and apt-get runs only
# when something is missing. Run as root (or with sudo available).
set -euo pipefail

packages=(
  build-essential cmake pkg-config python3
  libgtest-dev nlohmann-json3-dev zlib1g-dev
  libdnnl-dev libopenblas-dev
  libnng-dev libflatbuffers-dev flatbuffers-compiler
  dataset-fashion-mnist
)
if [ "${1:-}" = "--tests" ]; then
  packages+=(
    # bindings (the tests build and run all three languages)
    swig default-jdk-headless junit4 junit5 scala golang-go
    # dtrun's launchers: mpirun, and ssh/rsync between namespace "hosts"
    openmpi-bin libopenmpi-dev openssh-server openssh-client rsync iproute2
  )
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
