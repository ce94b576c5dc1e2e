// DT_NCCL_CHECK: turns a failed NCCL call into dt::core::Error carrying the
// call site and NCCL's own explanation, so that a collective that fails (a
// peer gone, a bad argument, a CUDA fault inside NCCL) reaches the C API as a
// status plus a message, never as a crash.
#pragma once

#include <nccl.h>

namespace dt::collective::nccl {

// Throws Error(kNccl) (kInvalidArgument for ncclInvalidArgument,
// kNoDevice when NCCL found no usable device) with
// "<file>:<line>: <what> failed: <ncclGetErrorString>[: <ncclGetLastError>]".
[[noreturn]] void throw_nccl_error(ncclResult_t status, const char* file, int line, const char* what);

}  // namespace dt::collective::nccl

#define DT_NCCL_CHECK(expr)                                                         \
  do {                                                                              \
    const ncclResult_t dt_nccl_check_status_ = (expr);                              \
    if (dt_nccl_check_status_ != ncclSuccess && dt_nccl_check_status_ != ncclInProgress) { \
      ::dt::collective::nccl::throw_nccl_error(dt_nccl_check_status_, __FILE__, __LINE__, #expr); \
    }                                                                               \
  } while (0)
