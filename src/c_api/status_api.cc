// Status text, last error, version and build information.
#include "c_api/api_guard.h"
#include "c_api/handles.h"
#include "c_api/options.h"
#include "core/context.h"
#include "dt_c_api.h"
#if DT_WITH_CUDA
#include "core/cuda/cuda_info.h"
#endif
#if DT_WITH_CUDNN
#include <cudnn.h>
#endif
#if DT_WITH_NCCL
#include <nccl.h>
#endif
#include <oneapi/dnnl/dnnl.h>

using dt::c_api::arg;
using dt::c_api::guarded;

#define DT_STRINGIFY2(x) #x
#define DT_STRINGIFY(x) DT_STRINGIFY2(x)

namespace {

// What a build lacks reads as zero, so every field's default is zero.
void no_defaults(dt_build_info*) {}

}  // namespace

extern "C" {

const char* dt_status_string(dt_status status) {
  switch (dt::c_api::raw_enum(status)) {
    case DT_OK: return "ok";
    case DT_ERR_INVALID_ARGUMENT: return "invalid argument";
    case DT_ERR_OUT_OF_MEMORY: return "out of memory";
    case DT_ERR_NOT_SUPPORTED: return "not supported";
    case DT_ERR_BAD_STATE: return "bad state";
    case DT_ERR_TIMED_OUT: return "timed out";
    case DT_ERR_CLOSED: return "closed";
    case DT_ERR_NETWORK: return "network error";
    case DT_ERR_REMOTE: return "remote failure";
    case DT_ERR_PROTOCOL: return "protocol error";
    case DT_ERR_CUDA: return "CUDA error";
    case DT_ERR_NCCL: return "NCCL error";
    case DT_ERR_IO: return "I/O error";
    case DT_ERR_INTERNAL: return "internal error";
    case DT_ERR_INVALID_HANDLE: return "invalid handle";
    case DT_ERR_SHAPE_MISMATCH: return "shape mismatch";
    case DT_ERR_DTYPE_MISMATCH: return "dtype mismatch";
    case DT_ERR_NO_DEVICE: return "no such device";
    case DT_ERR_NOT_FOUND: return "not found";
    case DT_ERR_PEER_LOST: return "peer lost";
    case DT_ERR_UNAUTHENTICATED: return "unauthenticated";
  }
  return "unknown status";
}

const char* dt_last_error(void) { return dt::c_api::last_error(); }

uint32_t dt_version(void) { return DT_VERSION_NUMBER; }

const char* dt_version_string(void) {
  return DT_STRINGIFY(DT_VERSION_MAJOR) "." DT_STRINGIFY(DT_VERSION_MINOR) "." DT_STRINGIFY(DT_VERSION_PATCH);
}

dt_status dt_build_info_init(dt_build_info* info, size_t struct_size) {
  return guarded(__func__, [&] { dt::c_api::init_struct(info, struct_size, no_defaults, "info"); });
}

dt_status dt_build_info_get(dt_build_info* info) {
  return guarded(__func__, [&] {
    dt_build_info full;
    dt::c_api::fill_defaults(&full, no_defaults);
    full.version_major = DT_VERSION_MAJOR;
    full.version_minor = DT_VERSION_MINOR;
    full.version_patch = DT_VERSION_PATCH;
#if DT_WITH_CUDA
    full.with_cuda = 1;
    full.cuda_runtime_version = dt::core::cuda::runtime_version();
#endif
#if DT_WITH_CUDNN
    full.with_cudnn = 1;
    full.cudnn_version = static_cast<int32_t>(cudnnGetVersion());
#endif
#if DT_WITH_NCCL
    full.with_nccl = 1;
    int nccl_version = 0;
    if (ncclGetVersion(&nccl_version) == ncclSuccess) full.nccl_version = nccl_version;
#endif
    // oneDNN is required: every build has it.
    full.with_onednn = 1;
    const dnnl_version_t* v = dnnl_version();
    full.onednn_version = static_cast<int32_t>(v->major * 10000 + v->minor * 100 + v->patch);
    full.gpu_count = dt::core::gpu_count();
    dt::c_api::write_struct(info, full, "info");
  });
}

dt_status dt_gpu_count(int32_t* out_count) {
  return guarded(__func__, [&] {
    arg(out_count, "out_count");
    *out_count = dt::core::gpu_count();
  });
}

}  // extern "C"
