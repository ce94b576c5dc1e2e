// MXNet's image record header: the scalar label, the label vector, the ids,
// the image bytes after them, and headers longer than their record.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "data/image_record.h"
#include "recordio_test_util.h"

namespace dt::data {
namespace {

using core::ErrorCode;
using testing::Bytes;
using testing::image_record_bytes;
using testing::thrown_by;

const std::string kWhere = "x.rec, record at byte offset 96";

TEST(ImageRecordTest, ScalarLabelIdsAndImage) {
  const Bytes payload = image_record_bytes({3.0f}, 0x1122334455667788ull, {0xff, 0xd8, 0xff, 0x00, 0x42});
  const ImageRecord record = parse_image_record(payload, kWhere);
  EXPECT_EQ(record.flag, 0u);
  EXPECT_EQ(record.labels, (std::vector<float>{3.0f}));
  EXPECT_EQ(record.id, 0x1122334455667788ull);
  EXPECT_EQ(record.id2, 0u);
  ASSERT_EQ(record.image_size, 5u);
  EXPECT_EQ(record.image, payload.data() + 24);
  EXPECT_EQ(class_label(record, kWhere), 3);
}

TEST(ImageRecordTest, LabelVectorFollowsTheHeader) {
  const Bytes payload = image_record_bytes({2.0f, 0.5f, -7.0f}, 9, {1, 2});
  const ImageRecord record = parse_image_record(payload, kWhere);
  EXPECT_EQ(record.flag, 3u);
  EXPECT_EQ(record.labels, (std::vector<float>{2.0f, 0.5f, -7.0f}));
  EXPECT_EQ(record.image_size, 2u);
  EXPECT_EQ(record.image, payload.data() + 36);
  EXPECT_EQ(class_label(record, kWhere), 2);  // the first label
  // A header and its labels only: an empty image, for the decoder to refuse.
  EXPECT_EQ(parse_image_record(image_record_bytes({1.0f, 2.0f}, 0, {}), kWhere).image_size, 0u);
}

TEST(ImageRecordTest, HeadersLongerThanTheRecordAreErrors) {
  const Bytes payload = image_record_bytes({1.0f}, 0, {});
  for (size_t size : {size_t{0}, size_t{4}, size_t{23}}) {
    const testing::Thrown thrown =
        thrown_by([&] { parse_image_record(Bytes(payload.begin(), payload.begin() + size), kWhere); });
    EXPECT_EQ(thrown.code, ErrorCode::kIo);
    EXPECT_NE(thrown.message.find(kWhere), std::string::npos) << thrown.message;
    EXPECT_NE(thrown.message.find("24-byte"), std::string::npos) << thrown.message;
  }
  // flag labels beyond the record, up to the largest flag.
  for (uint32_t flag : {2u, 1000u, 0xffffffffu}) {
    Bytes bad = image_record_bytes({1.0f, 2.0f}, 0, {});
    bad.pop_back();
    for (int i = 0; i < 4; ++i) bad[static_cast<size_t>(i)] = static_cast<unsigned char>(flag >> (8 * i));
    const testing::Thrown thrown = thrown_by([&] { parse_image_record(bad, kWhere); });
    EXPECT_EQ(thrown.code, ErrorCode::kIo);
    EXPECT_NE(thrown.message.find(kWhere), std::string::npos) << thrown.message;
    EXPECT_NE(thrown.message.find(std::to_string(flag) + " labels"), std::string::npos) << thrown.message;
  }
}

TEST(ImageRecordTest, LabelsThatAreNoClassAreErrors) {
  for (float label : {-1.0f, 2.5f, 3e9f, std::numeric_limits<float>::quiet_NaN(),
                      std::numeric_limits<float>::infinity()}) {
    const ImageRecord record = parse_image_record(image_record_bytes({label}, 0, {}), kWhere);
    const testing::Thrown thrown = thrown_by([&] { class_label(record, kWhere); });
    EXPECT_EQ(thrown.code, ErrorCode::kIo) << label;
    EXPECT_NE(thrown.message.find(kWhere), std::string::npos) << thrown.message;
  }
  EXPECT_EQ(class_label(parse_image_record(image_record_bytes({0.0f}, 0, {}), kWhere), kWhere), 0);
  EXPECT_EQ(class_label(parse_image_record(image_record_bytes({2147483520.0f}, 0, {}), kWhere), kWhere),
            2147483520);
}

}  // namespace
}  // namespace dt::data
