// The rule that picks a cuDNN convolution algorithm from cuDNN's list
// (ops/conv_algorithm_choice.h), on hand-made lists, and
// MXNET_CUDNN_AUTOTUNE_DEFAULT's reading; checked without a GPU.
// tests/gpu/gpu_conv_autotune_test.cc runs the search it serves.
#include "ops/conv_algorithm_choice.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "core/error.h"
#include "error_code_of.h"

namespace dt::ops {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

ConvCandidate candidate(int algorithm, float time_ms, size_t workspace, ConvMath math = ConvMath::kFma,
                        bool succeeded = true) {
  ConvCandidate c;
  c.algorithm = algorithm;
  c.succeeded = succeeded;
  c.math = math;
  c.time_ms = time_ms;
  c.workspace_bytes = workspace;
  return c;
}

// The algorithm the rule of mode picks, -1 for none.
int picked(const std::vector<ConvCandidate>& list, ConvAutotune mode, bool float32,
           size_t search_workspace = SIZE_MAX) {
  const int i = choose_conv_candidate(list, conv_choice_rule(mode, float32, search_workspace));
  return i < 0 ? -1 : list[static_cast<size_t>(i)].algorithm;
}

TEST(ConvAlgorithmChoice, TheVariableReadsAsMxnetsWithItsDefaultLimitedWorkspace) {
  EXPECT_EQ(conv_autotune_from(nullptr), ConvAutotune::kLimitedWorkspace);
  EXPECT_EQ(conv_autotune_from(""), ConvAutotune::kLimitedWorkspace);
  EXPECT_EQ(conv_autotune_from("0"), ConvAutotune::kOff);
  EXPECT_EQ(conv_autotune_from("1"), ConvAutotune::kLimitedWorkspace);
  EXPECT_EQ(conv_autotune_from("2"), ConvAutotune::kFastest);
  for (const char* bad : {"3", "-1", "fastest", "1 ", "true"}) {
    std::string message;
    EXPECT_EQ(test_support::code_of([bad] { conv_autotune_from(bad); }, &message), core::ErrorCode::kInvalidArgument)
        << bad;
    EXPECT_NE(message.find("MXNET_CUDNN_AUTOTUNE_DEFAULT"), std::string::npos) << message;
  }
  EXPECT_STREQ(conv_autotune_name(ConvAutotune::kFastest), "fastest");
  // MXNet's default workspace of a convolution, 1024 MB.
  EXPECT_EQ(kConvWorkspaceLimitBytes, 1024 * kMiB);
}

TEST(ConvAlgorithmChoice, TheEnvironmentIsReadThroughTheParameterTable) {
  setenv("MXNET_CUDNN_AUTOTUNE_DEFAULT", "2", 1);
  EXPECT_EQ(conv_autotune_from_environment(), ConvAutotune::kFastest);
  setenv("MXNET_CUDNN_AUTOTUNE_DEFAULT", "0", 1);
  EXPECT_EQ(conv_autotune_from_environment(), ConvAutotune::kOff);
  unsetenv("MXNET_CUDNN_AUTOTUNE_DEFAULT");
  EXPECT_EQ(conv_autotune_from_environment(), ConvAutotune::kLimitedWorkspace);
}

TEST(ConvAlgorithmChoice, ASearchTakesTheFastestThatSucceeded) {
  // Not sorted by time, so that taking the first entry would be wrong.
  const std::vector<ConvCandidate> list = {
      candidate(0, 0.50f, 0), candidate(1, 0.10f, 0, ConvMath::kFma, false),  // fastest, but it failed
      candidate(2, 0.20f, 4 * kMiB), candidate(3, 0.30f, 0)};
  EXPECT_EQ(picked(list, ConvAutotune::kLimitedWorkspace, true), 2);
  EXPECT_EQ(picked(list, ConvAutotune::kFastest, true), 2);
}

TEST(ConvAlgorithmChoice, EqualTimesKeepCudnnsOrder) {
  const std::vector<ConvCandidate> list = {candidate(5, 0.25f, 0), candidate(1, 0.25f, 0), candidate(0, 0.9f, 0)};
  EXPECT_EQ(picked(list, ConvAutotune::kFastest, true), 5);
}

TEST(ConvAlgorithmChoice, TensorOpEntriesAreExcludedInFloat32OnlyBecauseTheyMeanTf32) {
  const std::vector<ConvCandidate> list = {candidate(6, 0.05f, 0, ConvMath::kTensorOp),
                                           candidate(1, 0.20f, 0, ConvMath::kFma),
                                           candidate(7, 0.10f, 0, ConvMath::kDefault)};
  // float32: the tensor-op entry is out; the default-math one stays, since
  // the convolution runs with its FMA descriptor whatever cuDNN listed.
  EXPECT_EQ(picked(list, ConvAutotune::kFastest, true), 7);
  EXPECT_EQ(picked(list, ConvAutotune::kOff, true), 1);
  // 16-bit data: tensor cores are the point.
  EXPECT_EQ(picked(list, ConvAutotune::kFastest, false), 6);
  EXPECT_EQ(picked(list, ConvAutotune::kOff, false), 6);
  // Only tensor-op entries: nothing for float32.
  EXPECT_EQ(picked({candidate(6, 0.05f, 0, ConvMath::kTensorOp)}, ConvAutotune::kLimitedWorkspace, true), -1);
}

TEST(ConvAlgorithmChoice, LimitedWorkspaceBoundsItAt1GiBAndFastestDoesNot) {
  const std::vector<ConvCandidate> list = {candidate(4, 0.10f, 2048 * kMiB),  // FFT-like: fast, huge workspace
                                           candidate(1, 0.30f, 1024 * kMiB),  // exactly at the bound: allowed
                                           candidate(0, 0.40f, 0)};
  EXPECT_EQ(picked(list, ConvAutotune::kLimitedWorkspace, true), 1);
  EXPECT_EQ(picked(list, ConvAutotune::kFastest, true), 4);
  // Both search modes stay within the scratch the search could offer.
  EXPECT_EQ(picked(list, ConvAutotune::kFastest, true, 512 * kMiB), 0);
  EXPECT_EQ(picked(list, ConvAutotune::kLimitedWorkspace, true, 512 * kMiB), 0);
}

TEST(ConvAlgorithmChoice, HeuristicsTakeTheFirstUsableEntryAsListedWithoutAWorkspaceBound) {
  // The heuristics' times are not measurements; their order is the ranking.
  const std::vector<ConvCandidate> list = {candidate(3, -1.0f, 0, ConvMath::kFma, false),
                                           candidate(2, 9.0f, 4096 * kMiB), candidate(0, 0.1f, 0)};
  EXPECT_EQ(picked(list, ConvAutotune::kOff, true), 2);
  // Ranked by time the same list picks otherwise: the test can tell them apart.
  EXPECT_EQ(picked(list, ConvAutotune::kFastest, true), 0);
}

TEST(ConvAlgorithmChoice, TimesThatAreNotMeasurementsAreNotRanked) {
  const std::vector<ConvCandidate> list = {candidate(0, std::numeric_limits<float>::quiet_NaN(), 0),
                                           candidate(1, -1.0f, 0), candidate(2, 3.0f, 0)};
  EXPECT_EQ(picked(list, ConvAutotune::kFastest, true), 2);
  EXPECT_EQ(picked({list[0], list[1]}, ConvAutotune::kFastest, true), -1);
}

TEST(ConvAlgorithmChoice, NothingUsableIsMinusOne) {
  EXPECT_EQ(picked({}, ConvAutotune::kOff, true), -1);
  EXPECT_EQ(picked({candidate(0, 0.1f, 0, ConvMath::kFma, false)}, ConvAutotune::kOff, false), -1);
}

}  // namespace
}  // namespace dt::ops
