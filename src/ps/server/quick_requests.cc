#include "ps/server/quick_requests.h"

#include <cstdint>

#include "core/dtype.h"
#include "core/error.h"
#include "ps/transport/frame.h"

namespace dt::ps {

bool is_quick_request(const Message& request) {
  try {
    const Frame frame = Frame::borrow(request);
    const auto* data = frame.body<wire::DataRequest>();
    if (data == nullptr || data->slices() == nullptr) return false;
    switch (data->op()) {
      case wire::DataOp::Push:
      case wire::DataOp::Pull:
      case wire::DataOp::PushPull:
        break;
      default:
        return false;
    }
    uint64_t bytes = 0;
    for (const wire::TensorSlice* slice : *data->slices()) {
      if (slice == nullptr || !core::is_valid_dtype(slice->dtype()) || slice->adopt_from() >= 0) return false;
      const uint64_t begin = slice->part_begin(), end = slice->part_end();
      // Checked before multiplying: the request is untrusted.
      if (end <= begin || end - begin > kQuickRequestBytes) return false;
      bytes += (end - begin) * core::dtype_size(static_cast<core::DType>(slice->dtype()));
      if (bytes > kQuickRequestBytes) return false;
    }
    return bytes > 0;
  } catch (const core::Error&) {
    return false;
  }
}

}  // namespace dt::ps
