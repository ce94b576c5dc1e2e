// safetensors files (checkpoints, named arrays from other frameworks) through
// load_safetensors, onto a CPU context. Every array accepted must have the
// bytes its shape and dtype promise, all of them readable. The same bytes in
// memory (parse_safetensors: the state workers hand a joined one) must be
// accepted or refused alike, with the same arrays.
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/safetensors.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto* ctx = new std::shared_ptr<dt::core::Context>(dt::core::make_cpu_context());
  const std::string& path = dt::fuzz::InputFile::write(data, size);
  try {
    const dt::core::SafetensorsContents contents = dt::core::load_safetensors(path, *ctx);
    size_t total = 0;
    for (const auto& [name, array] : contents.arrays) {
      dt::fuzz::require(!name.empty() && array.defined(), "an accepted array without a name or storage");
      const auto* bytes = static_cast<const uint8_t*>(array.data());
      volatile uint8_t sum = 0;
      for (size_t i = 0; i < array.nbytes(); ++i) sum = static_cast<uint8_t>(sum + bytes[i]);
      total += array.nbytes();
    }
    dt::fuzz::require(total <= size, "the arrays hold more bytes than the file");
    dt::core::SafetensorsContents parsed;
    try {
      parsed = dt::core::parse_safetensors(std::vector<uint8_t>(data, data + size), *ctx, "the input");
    } catch (const dt::core::Error&) {
      dt::fuzz::require(false, "the bytes are refused where the file was accepted");
    }
    dt::fuzz::require(parsed.arrays.size() == contents.arrays.size() && parsed.metadata == contents.metadata,
                      "the bytes parse to other contents than the file");
    for (size_t i = 0; i < parsed.arrays.size(); ++i) {
      const auto& [name, array] = parsed.arrays[i];
      // (An empty array has no storage to compare.)
      dt::fuzz::require(name == contents.arrays[i].first && array.nbytes() == contents.arrays[i].second.nbytes() &&
                            (array.nbytes() == 0 ||
                             std::memcmp(array.data(), contents.arrays[i].second.data(), array.nbytes()) == 0),
                        "an array parsed from the bytes differs from the file's");
    }
    return 0;
  } catch (const dt::core::Error&) {
  }
  // Refused from the file: refused from the bytes too.
  try {
    dt::core::parse_safetensors(std::vector<uint8_t>(data, data + size), *ctx, "the input");
  } catch (const dt::core::Error&) {
    return 0;
  }
  dt::fuzz::require(false, "the bytes parse where the file was refused");
  return 0;
}
