// safetensors files (checkpoints, named arrays from other frameworks) through
// load_safetensors, onto a CPU context. Every array accepted must have the
// bytes its shape and dtype promise, all of them readable.
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
  } catch (const dt::core::Error&) {
  }
  return 0;
}
