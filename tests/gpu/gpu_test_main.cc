// main() of every GPU test: without a visible CUDA device the program exits
// 77, which CTest reports as skipped (SKIP_RETURN_CODE), never as passed.
#include <gtest/gtest.h>

#include <cstdio>

#include "core/cuda/gpu_context.h"

int main(int argc, char** argv) {
  if (dt::core::cuda::visible_device_count() == 0) {
    std::printf("SKIPPED: no CUDA device visible\n");
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
