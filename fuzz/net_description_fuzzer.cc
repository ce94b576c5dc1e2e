// The JSON description of a network (parse_net_description). An accepted
// description must write back to a text that parses to the same
// description, as net_description.h promises.
#include <string>

#include "core/error.h"
#include "fuzz_support.h"
#include "nn/net_description.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  dt::nn::NetDescription description;
  try {
    description = dt::nn::parse_net_description(text);
  } catch (const dt::core::Error&) {
    return 0;
  }
  const std::string written = dt::nn::net_description_to_text(description);
  try {
    dt::fuzz::require(dt::nn::parse_net_description(written) == description,
                      "a net description does not read back from its own text");
  } catch (const dt::core::Error&) {
    dt::fuzz::require(false, "a net description's own text is rejected");
  }
  return 0;
}
