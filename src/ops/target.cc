#include "ops/target.h"

#include <string>

#include "core/error.h"

namespace dt::ops {

bool Target::on_gpu() const { return context != nullptr && context->type() == core::DeviceType::kGpu; }

namespace detail {

const cpu::CpuEngine& cpu_engine(const Target& target) {
  if (target.engine == nullptr) {
    throw core::Error(core::ErrorCode::kBadState, "a CPU op needs the CPU engine, and none was given");
  }
  return *target.engine;
}

void throw_no_cuda(const char* op) {
  throw core::Error(core::ErrorCode::kInternal, std::string(op) + ": a GPU context in a build without CUDA");
}

}  // namespace detail

}  // namespace dt::ops
