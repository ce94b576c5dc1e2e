// Which cuDNN convolution algorithm runs a shape: the autotune mode
// (MXNET_CUDNN_AUTOTUNE_DEFAULT, with MXNet's values and default) and the
// rule that picks one candidate from cuDNN's list, kept apart from CUDA so
// that a machine without a GPU can test them on hand-made lists. The cuDNN
// side (ops/cuda/conv_algorithm_search.h) turns cuDNN's perf results into
// ConvCandidates and back.
//
// Pure functions and constant data: safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dt::ops {

// MXNET_CUDNN_AUTOTUNE_DEFAULT: MXNet's values, and its default, 1.
// PyTorch's torch.backends.cudnn.benchmark = True is kLimitedWorkspace or
// kFastest (PyTorch bounds the workspace by what it can allocate).
enum class ConvAutotune : int {
  kOff = 0,               // cuDNN's heuristics rank the algorithms; nothing is run to choose
  kLimitedWorkspace = 1,  // each algorithm timed once per shape; the fastest within kConvWorkspaceLimitBytes
  kFastest = 2,           // each algorithm timed; the fastest, whatever workspace it needs
};

// The workspace bound of kLimitedWorkspace: MXNet's default `workspace`
// of a convolution, 1024 MB.
constexpr size_t kConvWorkspaceLimitBytes = size_t{1} << 30;

// The variable's text: null or "" (unset) is MXNet's default,
// kLimitedWorkspace; "0", "1", "2" their modes. Error(kInvalidArgument)
// naming the variable for anything else.
ConvAutotune conv_autotune_from(const char* text);
// The same, of this process's environment.
ConvAutotune conv_autotune_from_environment();
// "heuristics", "limited workspace", "fastest".
const char* conv_autotune_name(ConvAutotune mode);

// cuDNN's math type of a candidate (cudnnMathType_t).
enum class ConvMath {
  kDefault,   // CUDNN_DEFAULT_MATH
  kTensorOp,  // CUDNN_TENSOR_OP_MATH or _ALLOW_CONVERSION: tensor cores (TF32 for float32 data)
  kFma,       // CUDNN_FMA_MATH: FMA instructions only
};

// One entry of cuDNN's list for one direction (forward, backward data,
// backward filter), as cudnnFind* (measured) or cudnnGet*_v7 (ranked by the
// heuristics) return it.
struct ConvCandidate {
  int algorithm = 0;           // the direction's cudnnConvolution*Algo_t
  bool succeeded = false;      // status == CUDNN_STATUS_SUCCESS
  ConvMath math = ConvMath::kDefault;
  float time_ms = 0.0f;        // measured; meaningless for the heuristics
  size_t workspace_bytes = 0;  // what the algorithm needs
};

// How candidates are ranked.
enum class ConvRanking {
  kAsListed,  // cuDNN's heuristics already list them best first
  kByTime,    // the search's measured times: the fastest first
};

struct ConvChoiceRule {
  // Float32 data: candidates with tensor-op math are excluded, since there
  // they mean TF32, whose 10-bit mantissa would make the GPU's results
  // differ from the CPU kernel's. In 16-bit data tensor cores are the point
  // of mixed precision and every math type is taken.
  bool float32 = true;
  size_t workspace_limit = SIZE_MAX;  // candidates needing more are excluded
  ConvRanking ranking = ConvRanking::kAsListed;
};

// The rule of a mode: kOff takes the heuristics' order with no workspace
// bound (the library's choice before autotuning existed); the search modes
// rank by time and bound the workspace by kConvWorkspaceLimitBytes
// (kLimitedWorkspace only) and by search_workspace_bytes, the scratch the
// search could offer cuDNN (an algorithm needing more was not timed fairly).
ConvChoiceRule conv_choice_rule(ConvAutotune mode, bool float32, size_t search_workspace_bytes);

// The index in candidates of the one to run: among those that succeeded,
// whose math the rule allows and whose workspace is within the limit (and,
// ranked by time, that have a time: not negative, not NaN), the first by
// the rule's ranking (ties by time keep cuDNN's order). -1 when none
// qualifies.
int choose_conv_candidate(const std::vector<ConvCandidate>& candidates, const ConvChoiceRule& rule);

}  // namespace dt::ops
