// The batch stager onto a GPU (data/batch_stager.h): what arrives on the
// device is the loader's batch bit for bit, labels beside their images, in
// the loader's order; the two page-locked slots take turns; a batch the
// test holds survives the batches staged after it; and the device arrays
// are ordered against the context's stream (a kernel queued on it reads
// the staged bytes). Skipped without a device (gpu_test_main.cc).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "core/cuda/gpu_context.h"
#include "data/batch_loader.h"
#include "data/batch_stager.h"
#include "data/split_sampler.h"
#include "ops/tensor_math.h"

namespace dt::data {
namespace {

// Sample i: label i, pixel p = (5 * i + p) % 256.
class NumberedImages final : public Dataset {
 public:
  explicit NumberedImages(int64_t size) : size_(size) {}
  int64_t size() const override { return size_; }
  core::Shape sample_shape() const override { return {3, 8, 8}; }
  int32_t read_sample(int64_t index, uint8_t* pixels) const override {
    for (int p = 0; p < 192; ++p) pixels[p] = static_cast<uint8_t>((5 * index + p) % 256);
    return static_cast<int32_t>(index);
  }

 private:
  int64_t size_;
};

LoaderOptions options() {
  LoaderOptions o;
  o.batch_size = 32;
  o.num_workers = 4;
  o.augmentation.crop_padding = 2;
  o.augmentation.horizontal_flip = true;
  o.augment_seed = 3;
  return o;
}

template <typename T>
std::vector<T> host_copy(const core::NDArray& array) {
  std::vector<T> out(array.size());
  array.copy_to_host(out.data(), out.size() * sizeof(T));
  return out;
}

template <typename T>
std::vector<T> host_view(const core::NDArray& array) {
  const T* p = array.data_as<T>();
  return std::vector<T>(p, p + array.size());
}

TEST(GpuBatchStagerTest, TheDeviceHoldsTheLoadersBatchesInOrderAndTheSlotsAlternate) {
  const auto dataset = std::make_shared<NumberedImages>(1000);
  const SplitSampler sampler(1000, 1, 0, /*shuffle=*/true, /*seed=*/9);
  BatchLoader reference(dataset, sampler, options());
  BatchLoader staged_loader(dataset, sampler, options());
  const auto gpu = core::cuda::make_gpu_context(0);
  BatchStager stager(staged_loader, gpu);
  EXPECT_TRUE(stager.pinned()) << "the driver refused page-locked memory for two small slots";
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    reference.start_epoch(epoch);
    stager.start_epoch(epoch);
    Batch want, got;
    int64_t k = 0;
    while (reference.next(want)) {
      ASSERT_TRUE(stager.next(got)) << "batch " << k;
      ASSERT_FALSE(got.images.context()->is_cpu());
      EXPECT_EQ(got.images.shape(), want.images.shape());
      EXPECT_EQ(stager.last_slot(), static_cast<size_t>(k % 2));
      // Read back through the context's stream, which waited for the copy.
      EXPECT_EQ(host_copy<float>(got.images), host_view<float>(want.images)) << "batch " << k;
      EXPECT_EQ(host_copy<int32_t>(got.labels), host_view<int32_t>(want.labels)) << "batch " << k;
      ++k;
    }
    EXPECT_EQ(k, 32);  // 31 of 32 and one of 8
    EXPECT_FALSE(stager.next(got));
  }
}

TEST(GpuBatchStagerTest, AKernelOnTheContextsStreamSeesTheStagedBytesAndAHeldBatchSurvives) {
  const auto dataset = std::make_shared<NumberedImages>(256);
  BatchLoader reference(dataset, SplitSampler(256), options());
  BatchLoader staged_loader(dataset, SplitSampler(256), options());
  const auto gpu = core::cuda::make_gpu_context(0);
  BatchStager stager(staged_loader, gpu);
  reference.start_epoch(0);
  stager.start_epoch(0);
  Batch want0, want, got;
  ASSERT_TRUE(reference.next(want0));
  ASSERT_TRUE(stager.next(got));
  const Batch held = got;
  // A kernel queued right after delivery (no host synchronisation between):
  // doubling on the device must double the staged values.
  core::NDArray doubled = core::NDArray::empty(gpu, core::DType::kFloat32, got.images.shape());
  ops::add(doubled, got.images, got.images);
  std::vector<float> twice = host_view<float>(want0.images);
  for (float& v : twice) v *= 2.0f;
  EXPECT_EQ(host_copy<float>(doubled), twice);
  for (int k = 1; k < 6; ++k) {
    ASSERT_TRUE(reference.next(want));
    ASSERT_TRUE(stager.next(got));
    EXPECT_EQ(host_copy<float>(got.images), host_view<float>(want.images)) << "batch " << k;
  }
  EXPECT_EQ(host_copy<float>(held.images), host_view<float>(want0.images));
  EXPECT_EQ(host_copy<int32_t>(held.labels), host_view<int32_t>(want0.labels));
}

}  // namespace
}  // namespace dt::data
