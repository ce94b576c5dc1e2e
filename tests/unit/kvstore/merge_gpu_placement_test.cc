// MXNet's CommDevice placement of merge buffers, checked without a GPU: the
// "device" kvstore asks MergeGpuPlacement where each key is summed.
#include "kvstore/merge_gpu_placement.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/error.h"

namespace dt::kvstore {
namespace {

using Request = MergeGpuPlacement::Request;

TEST(MergeGpuPlacement, LargestFirstOnTheLeastLoadedGpu) {
  MergeGpuPlacement placement;
  // Sorted: 400 -> gpu0 (tie, lowest id), 300 -> gpu1, 200 -> gpu1 (300 < 400),
  // 100 -> gpu0 (400 < 500).
  const std::vector<int> chosen = placement.place(
      {{1, 100, {0, 1}}, {2, 400, {0, 1}}, {3, 300, {0, 1}}, {4, 200, {0, 1}}});
  EXPECT_EQ(chosen, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(placement.load(0), 500u);
  EXPECT_EQ(placement.load(1), 500u);
  EXPECT_EQ(placement.load(7), 0u);
}

TEST(MergeGpuPlacement, EqualSizesGoRoundRobin) {
  MergeGpuPlacement placement;
  std::vector<Request> requests;
  for (uint64_t k = 0; k < 6; ++k) requests.push_back({k, 64, {0, 1, 2}});
  EXPECT_EQ(placement.place(requests), (std::vector<int>{0, 1, 2, 0, 1, 2}));
}

TEST(MergeGpuPlacement, LaterCallsContinueFromTheLoadSoFar) {
  MergeGpuPlacement placement;
  EXPECT_EQ(placement.place({{1, 1000, {0, 1}}}), (std::vector<int>{0}));
  placement.add_load(1, 300);  // a key kept on gpu1 (its optimizer state is there)
  EXPECT_EQ(placement.place({{2, 500, {0, 1}}, {3, 500, {0, 1}}}), (std::vector<int>{1, 1}));
  EXPECT_EQ(placement.place({{4, 10, {0, 1}}}), (std::vector<int>{0}));
}

TEST(MergeGpuPlacement, OnlyTheGpusOfTheKeysOwnValues) {
  MergeGpuPlacement placement;
  placement.add_load(0, 1 << 20);
  // gpu0 is busiest, but key 5's values are only there.
  EXPECT_EQ(placement.place({{5, 8, {0}}, {6, 8, {2, 3}}}), (std::vector<int>{0, 2}));
}

TEST(MergeGpuPlacement, AKeyWithoutGpusIsAnError) {
  MergeGpuPlacement placement;
  try {
    placement.place({{1, 8, {0}}, {9, 8, {}}});
    FAIL() << "expected an error";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.code(), core::ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("key 9"), std::string::npos);
  }
  EXPECT_EQ(placement.load(0), 0u) << "a refused call places nothing";
}

}  // namespace
}  // namespace dt::kvstore
