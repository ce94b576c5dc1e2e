// MXNet RecordIO image sets (.rec) through RecordIODataset, walked without
// an index: the framing, split records, image record headers, labels and the
// JPEG/PNG payloads, every sample of an accepted file read back at 4 x 4.
#include <vector>

#include "core/error.h"
#include "data/recordio_dataset.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = dt::fuzz::InputFile::write(data, size);
  try {
    const dt::data::RecordIODataset set(path, "", 4, 4);
    dt::fuzz::require(set.size() >= 1, "an accepted RecordIO file without records");
    std::vector<uint8_t> pixels(3 * 4 * 4);
    for (int64_t i = 0; i < set.size(); ++i) {
      dt::fuzz::require(set.offset(i) >= 0 && static_cast<size_t>(set.offset(i)) < size, "an offset outside the file");
      try {
        const int32_t label = set.read_sample(i, pixels.data());
        dt::fuzz::require(label >= 0, "a negative class");
      } catch (const dt::core::Error&) {
      }
    }
  } catch (const dt::core::Error&) {
  }
  return 0;
}
