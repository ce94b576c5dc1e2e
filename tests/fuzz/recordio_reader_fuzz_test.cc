// Random files and random mutations of a valid RecordIO image set (PNG and
// JPEG records, a split record, a label vector), read through
// RecordIODataset walking the .rec and through a mutated .idx. A bounded,
// seeded corpus, so the test is a plain GoogleTest that fails the same way
// every run: the reader never crashes or hangs, every file it refuses and
// every sample it cannot read is a kIo error naming the file, and every
// sample it reads has a class >= 0.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "../unit/data/image_test_util.h"
#include "../unit/data/recordio_test_util.h"
#include "core/error.h"
#include "data/recordio_dataset.h"

namespace dt::data {
namespace {

using core::Error;
using core::ErrorCode;
using testing::Bytes;

class RecordIOReaderFuzz : public ::testing::Test {
 protected:
  // Reads rec (and idx when given) and every sample; counts what happened.
  void feed(const Bytes& rec, const Bytes* idx) {
    testing::write_plain(dir_.file("input.rec"), rec);
    if (idx != nullptr) testing::write_plain(dir_.file("input.idx"), *idx);
    const std::string path = dir_.file(idx != nullptr ? "input.idx" : "input.rec");
    try {
      const RecordIODataset set(dir_.file("input.rec"), idx != nullptr ? dir_.file("input.idx") : "", 6, 6);
      ++accepted_;
      std::vector<uint8_t> pixels(3 * 6 * 6);
      for (int64_t i = 0; i < set.size(); ++i) {
        try {
          ASSERT_GE(set.read_sample(i, pixels.data()), 0);
          ++samples_read_;
        } catch (const Error& e) {
          ++samples_refused_;
          ASSERT_EQ(e.code(), ErrorCode::kIo) << e.what();
          ASSERT_NE(std::string(e.what()).find(dir_.file("input.rec")), std::string::npos) << e.what();
        }
      }
    } catch (const Error& e) {
      ++refused_;
      ASSERT_EQ(e.code(), ErrorCode::kIo) << e.what();
      ASSERT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }

  testing::TempDir dir_;
  int accepted_ = 0;
  int refused_ = 0;
  int samples_read_ = 0;
  int samples_refused_ = 0;
};

TEST_F(RecordIOReaderFuzz, RandomAndMutatedSetsNeverCrash) {
  std::mt19937 rng(20261129);
  auto byte = [&] { return static_cast<unsigned char>(rng() & 0xFF); };
  const testing::TestImage image = testing::pattern_image(6, 5, 3);
  Bytes split = testing::image_record_bytes({2.0f}, 2, testing::jpeg_bytes(image));
  split.resize((split.size() + 3) / 4 * 4, 0);
  testing::put_u32(split, testing::kRecordIOMagic);
  const std::vector<Bytes> payloads = {testing::image_record_bytes({0.0f}, 0, testing::png_bytes(image)),
                                       testing::image_record_bytes({1.0f, 4.0f}, 1, testing::png_bytes(image)),
                                       split};
  Bytes valid;
  std::string index;
  for (size_t i = 0; i < payloads.size(); ++i) {
    index += std::to_string(i) + "\t" + std::to_string(valid.size()) + "\n";
    const Bytes framed = testing::recordio_record(payloads[i]);
    valid.insert(valid.end(), framed.begin(), framed.end());
  }
  const Bytes valid_index(index.begin(), index.end());
  feed(valid, nullptr);
  ASSERT_EQ(samples_read_, 3);

  for (int round = 0; round < 150; ++round) {
    // Random bytes, sometimes behind a valid part header.
    Bytes noise(rng() % 200);
    for (unsigned char& b : noise) b = byte();
    if (rng() % 2 == 0 && noise.size() >= 8) {
      noise[0] = 0x0a, noise[1] = 0x23, noise[2] = 0xd7, noise[3] = 0xce;
    }
    feed(noise, nullptr);
    if (HasFatalFailure()) return;

    // The valid set cut short, extended, or with bytes changed (more often
    // in the part headers and image record headers, where the framing is).
    Bytes mutated = valid;
    switch (rng() % 4) {
      case 0:
        mutated.resize(rng() % mutated.size());
        break;
      case 1:
        for (size_t extra = 1 + rng() % 40; extra > 0; --extra) mutated.push_back(byte());
        break;
      case 2:
        mutated[rng() % 40] = byte();
        break;
      default:
        for (int flips = 1 + static_cast<int>(rng() % 8); flips > 0; --flips) mutated[rng() % mutated.size()] = byte();
        break;
    }
    feed(mutated, nullptr);
    if (HasFatalFailure()) return;

    // The valid .rec behind a mutated index.
    Bytes idx = valid_index;
    idx[rng() % idx.size()] = rng() % 2 == 0 ? byte() : static_cast<unsigned char>('0' + rng() % 10);
    feed(valid, &idx);
    if (HasFatalFailure()) return;
  }
  // Every outcome was exercised.
  EXPECT_GT(accepted_, 20);
  EXPECT_GT(refused_, 20);
  EXPECT_GT(samples_read_, 20);
  EXPECT_GT(samples_refused_, 5);
}

}  // namespace
}  // namespace dt::data
