// float32 arrays to and from host vectors, for the kvstore tests that run on
// any context (the CPU ones here, the GPU ones in tests/gpu).
#pragma once

#include <memory>
#include <vector>

#include "core/context.h"
#include "core/ndarray.h"

namespace dt::test {

inline core::NDArray float_array(const std::shared_ptr<core::Context>& ctx, const std::vector<float>& host) {
  core::NDArray a =
      core::NDArray::empty(ctx, core::DType::kFloat32, core::Shape({static_cast<int64_t>(host.size())}));
  a.copy_from_host(host.data(), host.size() * sizeof(float));
  return a;
}

inline std::vector<float> floats_of(const core::NDArray& a) {
  std::vector<float> out(a.size());
  a.copy_to_host(out.data(), out.size() * sizeof(float));
  return out;
}

// Another context of GPU id each time: its own stream, as a user's is.
inline std::shared_ptr<core::Context> gpu(int id) {
  return core::make_context(static_cast<int>(core::DeviceType::kGpu), id);
}

}  // namespace dt::test
