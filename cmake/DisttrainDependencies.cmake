# Resolves the AUTO/ON/OFF dependency options into DT_HAVE_* booleans.
# AUTO turns a feature on when its dependency is found; ON fails loudly when
# it is not, so that a packager never gets a silently smaller library.

function(dt_resolve option found what)
  if(${option} STREQUAL "OFF")
    set(_on FALSE)
  elseif(${found})
    set(_on TRUE)
  elseif(${option} STREQUAL "ON")
    message(FATAL_ERROR "${option}=ON but ${what} was not found")
  else()
    set(_on FALSE)
  endif()
  string(REPLACE "DT_WITH_" "DT_HAVE_" _have "${option}")
  set(${_have} ${_on} PARENT_SCOPE)
endfunction()

find_package(Threads REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(ZLIB REQUIRED)  # IDX datasets ship gzip-compressed

# CUDA: the toolkit lives under /usr/local/cuda on our machines, often off PATH.
set(_cuda_found FALSE)
if(NOT DT_WITH_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(_cuda_found TRUE)
  endif()
endif()
dt_resolve(DT_WITH_CUDA _cuda_found "the CUDA toolkit (nvcc)")

if(DT_HAVE_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    # Ampere and Hopper: what our GPU machines have. Each extra architecture
    # costs CI compile time on 2 cores.
    set(CMAKE_CUDA_ARCHITECTURES 80 90)
  endif()
  enable_language(CUDA)
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  find_package(CUDAToolkit REQUIRED)
endif()

set(_cudnn_found FALSE)
set(_nccl_found FALSE)
if(DT_HAVE_CUDA)
  find_path(DT_CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
  find_library(DT_CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
  if(DT_CUDNN_INCLUDE_DIR AND DT_CUDNN_LIBRARY)
    set(_cudnn_found TRUE)
  endif()
  find_path(DT_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
  find_library(DT_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
  if(DT_NCCL_INCLUDE_DIR AND DT_NCCL_LIBRARY)
    set(_nccl_found TRUE)
  endif()
elseif(DT_WITH_CUDNN STREQUAL "ON" OR DT_WITH_NCCL STREQUAL "ON")
  message(FATAL_ERROR "cuDNN and NCCL need DT_WITH_CUDA")
endif()
dt_resolve(DT_WITH_CUDNN _cudnn_found "cuDNN (cudnn.h, libcudnn)")
dt_resolve(DT_WITH_NCCL _nccl_found "NCCL (nccl.h, libnccl)")

# oneDNN: the CPU layer kernels (src/ops/cpu). Required, since a library
# without them could not run a network on the CPU at all.
find_package(dnnl CONFIG QUIET)
if(NOT dnnl_FOUND)
  message(FATAL_ERROR "oneDNN was not found; it is required for the CPU kernels (Debian: libdnnl-dev)")
endif()

# The oneDNN kernels share the cores with OpenBLAS; both pools are sized
# together through OpenMP (src/ops/cpu/cpu_engine), so both are linked here.
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_library(DT_OPENBLAS_LIBRARY NAMES openblas)
find_path(DT_CBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas x86_64-linux-gnu/openblas-pthread)
if(NOT DT_OPENBLAS_LIBRARY OR NOT DT_CBLAS_INCLUDE_DIR)
  message(FATAL_ERROR "OpenBLAS (Debian: libopenblas-dev) is needed beside oneDNN")
endif()
