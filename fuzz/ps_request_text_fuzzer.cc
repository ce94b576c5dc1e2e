// The texts a worker's requests carry to a server: SetOptimizer's optimizer
// JSON (OptimizerConfig::from_json) and SetGradientCompression's config
// (CompressionConfig::parse). The same input goes to both. Whatever is
// accepted must write back to a text that reads back the same (both headers
// promise it: the configs travel between nodes and into checkpoints).
#include <optional>
#include <string>

#include "core/error.h"
#include "fuzz_support.h"
#include "optim/optimizer_config.h"
#include "ps/compression/compression_mode.h"

namespace {

using dt::fuzz::require;

// parse(text), or nothing when it is rejected with core::Error.
template <typename Parse>
auto accepted(Parse parse, const std::string& text) -> std::optional<decltype(parse(text))> {
  try {
    return parse(text);
  } catch (const dt::core::Error&) {
    return std::nullopt;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);

  const auto optimizer = [](const std::string& t) { return dt::optim::OptimizerConfig::from_json(t); };
  if (const auto config = accepted(optimizer, text)) {
    const auto again = accepted(optimizer, config->to_json());
    require(again && *again == *config, "an optimizer config does not read back from its own JSON");
  }

  const auto compression = [](const std::string& t) { return dt::ps::compression::CompressionConfig::parse(t); };
  if (const auto config = accepted(compression, text)) {
    const auto again = accepted(compression, config->to_string());
    require(again && *again == *config, "a compression config does not read back from its own text");
  }
  return 0;
}
