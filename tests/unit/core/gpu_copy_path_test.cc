// MXNET_ENABLE_GPU_P2P's rule (core/gpu_copy_path.h), checked without a GPU:
// which path a copy between two GPU contexts takes, and how the variable's
// text reads. tests/gpu/gpu_copy_path_test.cc sees the copies take it.
#include "core/gpu_copy_path.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/error.h"
#include "error_code_of.h"

namespace dt::core {
namespace {

TEST(GpuCopyPath, OneDeviceIsNeverAPeerCopyWhateverTheSetting) {
  for (bool peer : {true, false}) {
    EXPECT_EQ(choose_gpu_copy_path(0, 0, peer), GpuCopyPath::kSameDevice);
    EXPECT_EQ(choose_gpu_copy_path(3, 3, peer), GpuCopyPath::kSameDevice);
  }
}

TEST(GpuCopyPath, TwoDevicesCopyPeerToPeerUnlessTurnedOff) {
  EXPECT_EQ(choose_gpu_copy_path(0, 1, true), GpuCopyPath::kPeer);
  EXPECT_EQ(choose_gpu_copy_path(1, 0, true), GpuCopyPath::kPeer);
  EXPECT_EQ(choose_gpu_copy_path(0, 1, false), GpuCopyPath::kThroughHost);
  EXPECT_EQ(choose_gpu_copy_path(7, 2, false), GpuCopyPath::kThroughHost);
  EXPECT_STREQ(gpu_copy_path_name(GpuCopyPath::kThroughHost), "through host");
}

TEST(GpuCopyPath, TheVariableIsZeroOrOneAndUnsetMeansPeerCopiesAsInMxnet) {
  EXPECT_TRUE(gpu_peer_copies_from(nullptr));
  EXPECT_TRUE(gpu_peer_copies_from(""));
  EXPECT_TRUE(gpu_peer_copies_from("1"));
  EXPECT_FALSE(gpu_peer_copies_from("0"));
  for (const char* bad : {"2", "no", "true", " 0"}) {
    std::string message;
    EXPECT_EQ(test_support::code_of([bad] { gpu_peer_copies_from(bad); }, &message), ErrorCode::kInvalidArgument)
        << bad;
    EXPECT_NE(message.find(std::string("MXNET_ENABLE_GPU_P2P=\"") + bad + "\""), std::string::npos) << message;
  }
}

TEST(GpuCopyPath, TheProcessEnvironmentIsReadThroughTheTable) {
  setenv("MXNET_ENABLE_GPU_P2P", "0", 1);
  EXPECT_FALSE(gpu_peer_copies_from_environment());
  unsetenv("MXNET_ENABLE_GPU_P2P");
  EXPECT_TRUE(gpu_peer_copies_from_environment());
}

TEST(GpuCopyPath, CountsArePerPath) {
  GpuCopyCounts counts;
  counts.count(GpuCopyPath::kThroughHost);
  counts.count(GpuCopyPath::kThroughHost);
  counts.count(GpuCopyPath::kSameDevice);
  EXPECT_EQ(counts.of(GpuCopyPath::kThroughHost), 2u);
  EXPECT_EQ(counts.of(GpuCopyPath::kSameDevice), 1u);
  EXPECT_EQ(counts.of(GpuCopyPath::kPeer), 0u);
}

}  // namespace
}  // namespace dt::core
