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
  if (core::gpu_count() > 0) GTEST_SKIP() << "a GPU is visible; tests/gpu covers nets on it";
  const auto e = error_of([] {
    Net net(build_model_description_from_text("lenet", ""),
            core::make_context(static_cast<int>(core::DeviceType::kGpu), 0));
  });
  // Without CUDA in the build the GPU path is absent; with it, the device is.
  EXPECT_EQ(e.code, DT_WITH_CUDA ? ErrorCode::kNoDevice : ErrorCode::kNotSupported) << e.message;
  EXPECT_NE(e.message.find("gpu(0)"), std::string::npos) << e.message;
}

}  // namespace
}  // namespace dt::nn
