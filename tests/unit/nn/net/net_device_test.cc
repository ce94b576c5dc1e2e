// A Net asked for a GPU where there is none: a clear error from the context,
// never a crash, in builds with and without CUDA. (Nets on a present GPU are
// tested in tests/gpu/gpu_training_test.cc.)
#include <gtest/gtest.h>

#include <string>

#include "core/context.h"
#include "nn/model_builders.h"
#include "nn/net.h"
#include "net_test_util.h"

namespace dt::nn {
namespace {

using core::ErrorCode;
using testing::error_of;

TEST(NetDevice, GpuNetWithoutADeviceIsAClearError) {
  // The first GPU id past the visible ones: absent on every machine.
  const int absent = core::gpu_count();
  const auto e = error_of([absent] {
    Net net(build_model_description_from_text("lenet", ""),
            core::make_context(static_cast<int>(core::DeviceType::kGpu), absent));
  });
  // Without CUDA in the build the GPU path is absent; with it, the device is.
  EXPECT_EQ(e.code, DT_WITH_CUDA ? ErrorCode::kNoDevice : ErrorCode::kNotSupported) << e.message;
  EXPECT_NE(e.message.find("gpu(" + std::to_string(absent) + ")"), std::string::npos) << e.message;
}

}  // namespace
}  // namespace dt::nn
