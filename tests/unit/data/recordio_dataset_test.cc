// RecordIODataset: PNG and JPEG records (one split around the magic, one
// with a label vector) read through the .idx or a walk of the .rec, resized
// like an image folder's, and malformed records failing the read that meets
// them with the file and byte offset.
#include "data/recordio_dataset.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "image_test_util.h"
#include "recordio_test_util.h"

namespace dt::data {
namespace {

using core::ErrorCode;
using testing::Bytes;
using testing::concat;
using testing::image_record_bytes;
using testing::recordio_record;
using testing::thrown_by;

constexpr int kHeight = 5;
constexpr int kWidth = 4;

class RecordIODatasetTest : public ::testing::Test {
 protected:
  // Writes dir/set.rec of `payloads` and, when with_index, dir/set.idx.
  std::string write_set(const std::vector<Bytes>& payloads, bool with_index) {
    Bytes rec;
    std::string idx;
    for (size_t i = 0; i < payloads.size(); ++i) {
      idx += std::to_string(i) + "\t" + std::to_string(rec.size()) + "\n";
      const Bytes framed = recordio_record(payloads[i], i == 2 ? &split_parts_ : nullptr);
      rec.insert(rec.end(), framed.begin(), framed.end());
    }
    testing::write_plain(dir_.file("set.rec"), rec);
    if (with_index) testing::write_plain(dir_.file("set.idx"), Bytes(idx.begin(), idx.end()));
    return dir_.file("set.rec");
  }

  // A PNG record of class 0, a JPEG one with the label vector [1, 7], and a
  // JPEG one of class 2 followed by the magic bytes (ignored after the
  // image's end marker), which splits its record.
  std::vector<Bytes> three_records() {
    const testing::TestImage image = testing::pattern_image(kHeight, kWidth, 3);
    Bytes split = image_record_bytes({2.0f}, 2, testing::jpeg_bytes(image));
    split.resize((split.size() + 3) / 4 * 4, 0);
    testing::put_u32(split, testing::kRecordIOMagic);
    return {image_record_bytes({0.0f}, 0, testing::png_bytes(image)),
            image_record_bytes({1.0f, 7.0f}, 1, testing::jpeg_bytes(image)), split};
  }

  testing::TempDir dir_;
  int split_parts_ = 0;
};

// The largest difference between a planar sample and the pattern image.
int max_difference(const std::vector<uint8_t>& pixels) {
  int worst = 0;
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < kHeight; ++y) {
      for (int x = 0; x < kWidth; ++x) {
        const int got = pixels[static_cast<size_t>((c * kHeight + y) * kWidth + x)];
        worst = std::max(worst, std::abs(got - testing::pattern_pixel(y, x, c)));
      }
    }
  }
  return worst;
}

TEST_F(RecordIODatasetTest, ReadsPngJpegAndSplitRecordsThroughTheIndexOrAWalk) {
  const std::string rec = write_set(three_records(), true);
  ASSERT_EQ(split_parts_, 2);
  EXPECT_EQ(RecordIODataset::sibling_index(rec), dir_.file("set.idx"));
  const RecordIODataset indexed(rec, RecordIODataset::sibling_index(rec), kHeight, kWidth);
  const RecordIODataset walked(rec, "", kHeight, kWidth);
  for (const RecordIODataset* set : {&indexed, &walked}) {
    ASSERT_EQ(set->size(), 3);
    EXPECT_EQ(set->sample_shape(), (core::Shape{3, kHeight, kWidth}));
    std::vector<uint8_t> pixels(3 * kHeight * kWidth);
    EXPECT_EQ(set->read_sample(0, pixels.data()), 0);
    EXPECT_EQ(max_difference(pixels), 0);  // PNG at its own size: exact
    EXPECT_EQ(set->read_sample(1, pixels.data()), 1);
    EXPECT_LE(max_difference(pixels), 3);  // JPEG at quality 100
    EXPECT_EQ(set->read_sample(2, pixels.data()), 2);
    EXPECT_LE(max_difference(pixels), 3);
    EXPECT_EQ(set->header(1).labels, (std::vector<float>{1.0f, 7.0f}));
    EXPECT_EQ(set->header(2).id, 2u);
  }
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(indexed.offset(i), walked.offset(i));
}

TEST_F(RecordIODatasetTest, ResizesAndCropsLikeAnImageFolder) {
  const std::string rec = write_set(three_records(), false);
  EXPECT_EQ(RecordIODataset::sibling_index(rec), "");
  const RecordIODataset set(rec, "", 2, 3);
  EXPECT_TRUE(set.has_source_images());
  std::vector<uint8_t> pixels(3 * 2 * 3);
  EXPECT_EQ(set.read_region(
                0, [](int64_t h, int64_t w) { return CropBox{1, 1, h - 1, w - 1}; }, pixels.data()),
            0);
  std::vector<uint8_t> expected(pixels.size());
  const testing::TestImage image = testing::pattern_image(kHeight, kWidth, 3);
  resize_bilinear(image.pixels.data(), 3, kHeight, kWidth, CropBox{1, 1, kHeight - 1, kWidth - 1}, 2, 3,
                  expected.data());
  EXPECT_EQ(pixels, expected);
}

TEST_F(RecordIODatasetTest, MalformedRecordsFailTheirReadNamingFileAndOffset) {
  const testing::TestImage image = testing::pattern_image(kHeight, kWidth, 3);
  Bytes corrupt = testing::png_bytes(image);
  corrupt.resize(corrupt.size() / 2);
  const std::vector<Bytes> payloads = {
      image_record_bytes({0.0f}, 0, testing::png_bytes(image)),
      image_record_bytes({0.5f}, 1, testing::png_bytes(image)),  // not a class
      image_record_bytes({1.0f}, 2, corrupt),                     // truncated PNG
      Bytes{1, 2, 3},                                             // shorter than a header
      image_record_bytes({1.0f}, 4, {'G', 'I', 'F', '8'}),        // not JPEG or PNG
  };
  const std::string rec = write_set(payloads, false);
  const RecordIODataset set(rec, "", kHeight, kWidth);
  ASSERT_EQ(set.size(), 5);
  std::vector<uint8_t> pixels(3 * kHeight * kWidth);
  EXPECT_EQ(set.read_sample(0, pixels.data()), 0);
  for (int64_t i = 1; i < 5; ++i) {
    const testing::Thrown thrown = thrown_by([&] { set.read_sample(i, pixels.data()); });
    EXPECT_EQ(thrown.code, ErrorCode::kIo) << thrown.message;
    EXPECT_NE(thrown.message.find(rec + ", record at byte offset " + std::to_string(set.offset(i))),
              std::string::npos)
        << thrown.message;
  }
  EXPECT_EQ(thrown_by([&] { set.read_sample(5, pixels.data()); }).code, ErrorCode::kInvalidArgument);
}

TEST_F(RecordIODatasetTest, IndexIntoTheMiddleOfARecordFailsItsRead) {
  const std::string rec = write_set(three_records(), false);
  testing::write_plain(dir_.file("set.idx"), Bytes{'0', '\t', '4', '\n'});
  const RecordIODataset set(rec, dir_.file("set.idx"), kHeight, kWidth);
  std::vector<uint8_t> pixels(3 * kHeight * kWidth);
  const testing::Thrown thrown = thrown_by([&] { set.read_sample(0, pixels.data()); });
  EXPECT_EQ(thrown.code, ErrorCode::kIo);
  EXPECT_NE(thrown.message.find("byte offset 4 has bad magic"), std::string::npos) << thrown.message;
}

TEST_F(RecordIODatasetTest, EmptyFilesAndBadSizesAreRefused) {
  testing::write_plain(dir_.file("empty.rec"), {});
  const testing::Thrown empty = thrown_by([&] { RecordIODataset(dir_.file("empty.rec"), "", 4, 4); });
  EXPECT_EQ(empty.code, ErrorCode::kIo);
  EXPECT_NE(empty.message.find("holds no record"), std::string::npos) << empty.message;
  const std::string rec = write_set(three_records(), false);
  EXPECT_EQ(thrown_by([&] { RecordIODataset(rec, "", 0, 4); }).code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(thrown_by([&] { RecordIODataset(rec, "", 4, 65501); }).code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(thrown_by([&] { RecordIODataset(dir_.file("absent.rec"), "", 4, 4); }).code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace dt::data
