#include "c_api/api_guard.h"

namespace dt::c_api {

namespace {
// Per thread, like errno: bindings read it right after the failing call on
// the same thread.
thread_local std::string last_error_message;
}  // namespace

void set_last_error(const std::string& message) { last_error_message = message; }

const char* last_error() { return last_error_message.c_str(); }

dt_status status_of(core::ErrorCode code) { return static_cast<dt_status>(static_cast<int>(code)); }

#define DT_SAME_VALUE(status, code) \
  static_assert(static_cast<int>(status) == static_cast<int>(core::ErrorCode::code), #status)
DT_SAME_VALUE(DT_ERR_INVALID_ARGUMENT, kInvalidArgument);
DT_SAME_VALUE(DT_ERR_OUT_OF_MEMORY, kOutOfMemory);
DT_SAME_VALUE(DT_ERR_NOT_SUPPORTED, kNotSupported);
DT_SAME_VALUE(DT_ERR_BAD_STATE, kBadState);
DT_SAME_VALUE(DT_ERR_TIMED_OUT, kTimedOut);
DT_SAME_VALUE(DT_ERR_CLOSED, kClosed);
DT_SAME_VALUE(DT_ERR_NETWORK, kNetwork);
DT_SAME_VALUE(DT_ERR_REMOTE, kRemote);
DT_SAME_VALUE(DT_ERR_PROTOCOL, kProtocol);
DT_SAME_VALUE(DT_ERR_CUDA, kCuda);
DT_SAME_VALUE(DT_ERR_NCCL, kNccl);
DT_SAME_VALUE(DT_ERR_IO, kIo);
DT_SAME_VALUE(DT_ERR_INTERNAL, kInternal);
DT_SAME_VALUE(DT_ERR_INVALID_HANDLE, kInvalidHandle);
DT_SAME_VALUE(DT_ERR_SHAPE_MISMATCH, kShapeMismatch);
DT_SAME_VALUE(DT_ERR_DTYPE_MISMATCH, kDtypeMismatch);
DT_SAME_VALUE(DT_ERR_NO_DEVICE, kNoDevice);
DT_SAME_VALUE(DT_ERR_NOT_FOUND, kNotFound);
DT_SAME_VALUE(DT_ERR_PEER_LOST, kPeerLost);
DT_SAME_VALUE(DT_ERR_UNAUTHENTICATED, kUnauthenticated);
#undef DT_SAME_VALUE

}  // namespace dt::c_api
