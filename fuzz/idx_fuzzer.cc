// IDX files (MNIST and its descendants), plain or gzip-compressed, through
// read_idx. An accepted file's array holds exactly its dims' elements.
#include "core/error.h"
#include "data/idx_file.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = dt::fuzz::InputFile::write(data, size);
  try {
    const dt::core::NDArray array = dt::data::read_idx(path);
    dt::fuzz::require(array.defined() && array.shape().ndim() >= 1, "an accepted IDX file without dims");
    const auto* bytes = static_cast<const uint8_t*>(array.data());
    volatile uint8_t sum = 0;
    for (size_t i = 0; i < array.nbytes(); ++i) sum = static_cast<uint8_t>(sum + bytes[i]);
  } catch (const dt::core::Error&) {
  }
  return 0;
}
