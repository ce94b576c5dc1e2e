// CIFAR-10 and CIFAR-100 binary files through CifarDataset, both variants on
// every input, and every sample of an accepted file read back.
#include <vector>

#include "core/error.h"
#include "data/cifar_dataset.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using dt::data::CifarDataset;
  using dt::data::CifarVariant;
  const std::string& path = dt::fuzz::InputFile::write(data, size);
  for (CifarVariant variant : {CifarVariant::kCifar10, CifarVariant::kCifar100}) {
    try {
      const CifarDataset set({path}, variant);
      dt::fuzz::require(static_cast<size_t>(set.size()) * CifarDataset::record_bytes(variant) == size,
                        "the records do not tile the file");
      std::vector<uint8_t> pixels(CifarDataset::kPixelBytes);
      for (int64_t i = 0; i < set.size(); ++i) {
        const int32_t label = set.read_sample(i, pixels.data());
        dt::fuzz::require(label >= 0 && label < set.num_classes(), "a label outside the classes");
      }
    } catch (const dt::core::Error&) {
    }
  }
  return 0;
}
