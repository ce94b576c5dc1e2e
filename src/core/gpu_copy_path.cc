#include "core/gpu_copy_path.h"

#include <string>

#include "core/error.h"
#include "core/parameter_table.h"

namespace dt::core {

GpuCopyPath choose_gpu_copy_path(int src_device, int dst_device, bool peer_copies) {
  if (src_device == dst_device) return GpuCopyPath::kSameDevice;
  return peer_copies ? GpuCopyPath::kPeer : GpuCopyPath::kThroughHost;
}

const char* gpu_copy_path_name(GpuCopyPath path) {
  switch (path) {
    case GpuCopyPath::kSameDevice: return "same device";
    case GpuCopyPath::kPeer: return "peer";
    case GpuCopyPath::kThroughHost: return "through host";
  }
  return "unknown";
}

bool gpu_peer_copies_from(const char* text) {
  if (text == nullptr || *text == '\0' || std::string(text) == "1") return true;
  if (std::string(text) == "0") return false;
  throw Error(ErrorCode::kInvalidArgument,
              std::string("MXNET_ENABLE_GPU_P2P=\"") + text +
                  "\" is not 0 (copies between GPUs through host memory) or 1 (peer copies, the default)");
}

bool gpu_peer_copies_from_environment() { return gpu_peer_copies_from(read_parameter("MXNET_ENABLE_GPU_P2P")); }

}  // namespace dt::core
