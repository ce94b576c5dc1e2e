// DT_HOST_DEVICE marks an inline function that host code and CUDA kernels
// both call, so that one definition (and the CPU tests of it) serves both.
#pragma once

#if defined(__CUDACC__)
#define DT_HOST_DEVICE __host__ __device__
#else
#define DT_HOST_DEVICE
#endif
