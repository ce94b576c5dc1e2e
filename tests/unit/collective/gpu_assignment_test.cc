// One GPU per rank, checked from the places the ranks exchange before a GPU
// collective is set up (collective/gpu_assignment.h). No GPU needed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collective/gpu_assignment.h"
#include "core/error.h"

namespace dt::collective {
namespace {

std::string error_of(const std::vector<GpuPlace>& places) {
  try {
    check_one_gpu_per_rank(places);
  } catch (const core::Error& e) {
    EXPECT_EQ(e.code(), core::ErrorCode::kInvalidArgument);
    return e.what();
  }
  return "no error";
}

TEST(GpuAssignment, OneGpuPerRankPassesOnOneHostAndAcrossHosts) {
  EXPECT_EQ(error_of({{"a", 0}, {"a", 1}, {"b", 0}, {"b", 1}}), "no error");
  EXPECT_EQ(error_of({}), "no error");
}

TEST(GpuAssignment, TwoRanksOnOneGpuAreNamedBoth) {
  // rank mod GPUs on 2 hosts x 2 GPUs with workers c a b c: the old pick.
  const std::string e = error_of({{"a", 0}, {"b", 1}, {"a", 0}, {"b", 1}});
  EXPECT_NE(e.find("workers 0 and 2 would share GPU 0 on host a"), std::string::npos) << e;
}

TEST(GpuAssignment, PlacesRoundTripAndMalformedOnesNameTheRank) {
  const std::vector<uint8_t> bytes = encode_gpu_place({"gpu-host-7", 3});
  const GpuPlace back = decode_gpu_place(bytes.data(), bytes.size(), 1);
  EXPECT_EQ(back.host, "gpu-host-7");
  EXPECT_EQ(back.device, 3);
  try {
    decode_gpu_place(bytes.data(), 3, 5);
    FAIL() << "a 3-byte place decoded";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.code(), core::ErrorCode::kProtocol);
    EXPECT_NE(std::string(e.what()).find("rank 5"), std::string::npos);
  }
  const std::vector<uint8_t> huge = {0xff, 0xff, 0xff, 0x7f, 'h'};
  EXPECT_THROW(decode_gpu_place(huge.data(), huge.size(), 0), core::Error);
  EXPECT_FALSE(this_gpu_place(0).host.empty());
}

}  // namespace
}  // namespace dt::collective
