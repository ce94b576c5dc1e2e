#!/usr/bin/env bash
# Collects, on a Debian machine with apt, the packages that building and
# checking disttrain on a GPU machine needs but that such a machine may lack
# (it may have CUDA, cuDNN, NCCL, CMake and PyTorch, and no package registry):
# nng, FlatBuffers, oneDNN, OpenBLAS, GoogleTest, nlohmann-json,
# libjpeg-turbo, libpng and the Fashion-MNIST data, as .deb files.
# scripts/gpu-check.sh unpacks them into a private prefix there (never
# into /).
#
#   scripts/gpu-bundle.sh [DIR]      (default: build-gpu-bundle, git-ignored)
#
# About 50 MB. The folder is git-ignored: take it along to the GPU machine
# explicitly (copy it, or name it among the paths a remote run carries).
set -euo pipefail

dir="${1:-build-gpu-bundle}"
packages=(
  libnng-dev libnng1 libmbedtls-dev libmbedtls14 libmbedx509-1 libmbedcrypto7
  libflatbuffers-dev libflatbuffers2 flatbuffers-compiler flatbuffers-compiler-dev
  libdnnl-dev libdnnl2 ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-c-headers
  libopenblas-dev libopenblas-pthread-dev libopenblas0 libopenblas0-pthread libgfortran5
  libgtest-dev libgmock-dev nlohmann-json3-dev zlib1g-dev zlib1g
  libjpeg62-turbo-dev libjpeg62-turbo libpng-dev libpng16-16
  dataset-fashion-mnist
)
mkdir -p "$dir/debs"
cd "$dir/debs"
# apt-get download drops privileges to _apt, which may not write here.
chmod 0777 . 2>/dev/null || true
# A fresh machine may not have package lists yet.
apt-get download "${packages[@]}" || { apt-get update -qq && apt-get download "${packages[@]}"; }
echo "gpu-bundle: $(ls ./*.deb | wc -l) packages, $(du -sh . | cut -f1), in $dir/debs"
