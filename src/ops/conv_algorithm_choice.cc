#include "ops/conv_algorithm_choice.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "core/parameter_table.h"

namespace dt::ops {

ConvAutotune conv_autotune_from(const char* text) {
  if (text == nullptr || *text == '\0') return ConvAutotune::kLimitedWorkspace;
  const std::string value(text);
  if (value == "0") return ConvAutotune::kOff;
  if (value == "1") return ConvAutotune::kLimitedWorkspace;
  if (value == "2") return ConvAutotune::kFastest;
  throw core::Error(core::ErrorCode::kInvalidArgument,
                    "MXNET_CUDNN_AUTOTUNE_DEFAULT=\"" + value +
                        "\" is not 0 (cuDNN's heuristics), 1 (time the algorithms, workspace up to 1 GiB: the "
                        "default) or 2 (time them, the fastest whatever its workspace)");
}

ConvAutotune conv_autotune_from_environment() {
  return conv_autotune_from(core::read_parameter("MXNET_CUDNN_AUTOTUNE_DEFAULT"));
}

const char* conv_autotune_name(ConvAutotune mode) {
  switch (mode) {
    case ConvAutotune::kOff: return "heuristics";
    case ConvAutotune::kLimitedWorkspace: return "limited workspace";
    case ConvAutotune::kFastest: return "fastest";
  }
  return "unknown";
}

ConvChoiceRule conv_choice_rule(ConvAutotune mode, bool float32, size_t search_workspace_bytes) {
  ConvChoiceRule rule;
  rule.float32 = float32;
  if (mode == ConvAutotune::kOff) return rule;
  rule.ranking = ConvRanking::kByTime;
  rule.workspace_limit = search_workspace_bytes;
  if (mode == ConvAutotune::kLimitedWorkspace) {
    rule.workspace_limit = std::min(rule.workspace_limit, kConvWorkspaceLimitBytes);
  }
  return rule;
}

int choose_conv_candidate(const std::vector<ConvCandidate>& candidates, const ConvChoiceRule& rule) {
  int best = -1;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const ConvCandidate& c = candidates[i];
    if (!c.succeeded) continue;
    if (rule.float32 && c.math == ConvMath::kTensorOp) continue;
    if (c.workspace_bytes > rule.workspace_limit) continue;
    if (rule.ranking == ConvRanking::kAsListed) return static_cast<int>(i);
    // A time that is not a measurement (negative, NaN) cannot be ranked.
    if (!(c.time_ms >= 0.0f)) continue;
    // Strictly faster only: equal times keep cuDNN's order.
    if (best < 0 || c.time_ms < candidates[static_cast<size_t>(best)].time_ms) best = static_cast<int>(i);
  }
  return best;
}

}  // namespace dt::ops
