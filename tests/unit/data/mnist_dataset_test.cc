#include "data/mnist_dataset.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "data_test_util.h"

namespace dt::data {
namespace {

using core::DType;
using core::ErrorCode;
using testing::Bytes;
using testing::idx_header;
using testing::idx_u8;
using testing::thrown_by;

class MnistDatasetTest : public ::testing::Test {
 protected:
  // n images of 2x3 pixels, image i filled with 10 * i + pixel.
  static Bytes images(uint32_t n) {
    Bytes pixels;
    for (uint32_t i = 0; i < n; ++i) {
      for (uint32_t p = 0; p < 6; ++p) pixels.push_back(static_cast<unsigned char>(10 * i + p));
    }
    return idx_u8({n, 2, 3}, pixels);
  }

  testing::TempDir dir_;
};

TEST_F(MnistDatasetTest, LoadsAPair) {
  const std::string image_path = dir_.file("images.gz");
  const std::string label_path = dir_.file("labels");
  testing::write_gzip(image_path, images(5));
  testing::write_plain(label_path, idx_u8({5}, {3, 0, 9, 1, 3}));

  const MnistDataset dataset(image_path, label_path);
  EXPECT_EQ(dataset.size(), 5);
  EXPECT_EQ(dataset.num_classes(), 10);
  EXPECT_EQ(dataset.sample_shape(), core::Shape({1, 2, 3}));
  EXPECT_EQ(dataset.images().shape(), core::Shape({5, 1, 2, 3}));
  EXPECT_EQ(dataset.images().dtype(), DType::kUInt8);
  EXPECT_EQ(dataset.labels().shape(), core::Shape({5}));
  ASSERT_EQ(dataset.labels().dtype(), DType::kInt32);
  const std::vector<int32_t> expected_labels{3, 0, 9, 1, 3};
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(dataset.labels().data_as<int32_t>()[i], expected_labels[i]);

  std::array<uint8_t, 6> pixels{};
  EXPECT_EQ(dataset.read_sample(2, pixels.data()), 9);
  for (uint8_t p = 0; p < 6; ++p) EXPECT_EQ(pixels[p], 20 + p);
  EXPECT_EQ(thrown_by([&] { dataset.read_sample(5, pixels.data()); }).code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(thrown_by([&] { dataset.read_sample(-1, pixels.data()); }).code, ErrorCode::kInvalidArgument);
}

TEST_F(MnistDatasetTest, AcceptsInt32LabelFiles) {
  Bytes labels = idx_header(0x0C, {2});
  labels.insert(labels.end(), {0, 0, 0, 7, 0, 0, 0, 2});
  testing::write_plain(dir_.file("images"), images(2));
  testing::write_plain(dir_.file("labels"), labels);
  const MnistDataset dataset(dir_.file("images"), dir_.file("labels"));
  EXPECT_EQ(dataset.labels().data_as<int32_t>()[0], 7);
  EXPECT_EQ(dataset.labels().data_as<int32_t>()[1], 2);
}

TEST_F(MnistDatasetTest, FindsStandardNamesPlainOrGzip) {
  testing::write_plain(dir_.file("train-images-idx3-ubyte"), images(4));
  testing::write_gzip(dir_.file("train-labels-idx1-ubyte.gz"), idx_u8({4}, {1, 2, 3, 4}));
  testing::write_gzip(dir_.file("t10k-images-idx3-ubyte.gz"), images(2));
  testing::write_plain(dir_.file("t10k-labels-idx1-ubyte"), idx_u8({2}, {5, 6}));

  EXPECT_EQ(MnistDataset::from_directory(dir_.path(), MnistSplit::kTrain).size(), 4);
  const MnistDataset test = MnistDataset::from_directory(dir_.path(), MnistSplit::kTest);
  EXPECT_EQ(test.size(), 2);
  EXPECT_EQ(test.labels().data_as<int32_t>()[1], 6);
}

TEST_F(MnistDatasetTest, MissingDirectoryFilesAreNotFound) {
  testing::write_plain(dir_.file("train-images-idx3-ubyte"), images(4));
  const testing::Thrown error = thrown_by([&] { MnistDataset::from_directory(dir_.path(), MnistSplit::kTrain); });
  EXPECT_EQ(error.code, ErrorCode::kNotFound);
  EXPECT_NE(error.message.find(dir_.file("train-labels-idx1-ubyte")), std::string::npos) << error.message;
  EXPECT_NE(error.message.find(dir_.file("train-labels-idx1-ubyte.gz")), std::string::npos) << error.message;
}

TEST_F(MnistDatasetTest, CountMismatchNamesBothFilesAndCounts) {
  const std::string image_path = dir_.file("images");
  const std::string label_path = dir_.file("labels.gz");
  testing::write_plain(image_path, images(5));
  testing::write_gzip(label_path, idx_u8({4}, {0, 1, 2, 3}));
  const testing::Thrown error = thrown_by([&] { MnistDataset(image_path, label_path); });
  EXPECT_EQ(error.code, ErrorCode::kIo);
  for (const std::string& part : {image_path, label_path, std::string("5 images"), std::string("4 labels")}) {
    EXPECT_NE(error.message.find(part), std::string::npos) << part << " missing from: " << error.message;
  }
}

TEST_F(MnistDatasetTest, RejectsLabelsOutOfRange) {
  testing::write_plain(dir_.file("images"), images(3));
  testing::write_plain(dir_.file("labels"), idx_u8({3}, {0, 10, 1}));
  const testing::Thrown error = thrown_by([&] { MnistDataset(dir_.file("images"), dir_.file("labels")); });
  EXPECT_EQ(error.code, ErrorCode::kIo);
  EXPECT_NE(error.message.find("label 10 at index 1"), std::string::npos) << error.message;
  EXPECT_NE(error.message.find(dir_.file("labels")), std::string::npos) << error.message;

  // The same labels are fine with 11 classes, and 3 is out of range with 3.
  EXPECT_EQ(MnistDataset(dir_.file("images"), dir_.file("labels"), 11).num_classes(), 11);
  testing::write_plain(dir_.file("labels"), idx_u8({3}, {0, 3, 1}));
  EXPECT_EQ(thrown_by([&] { MnistDataset(dir_.file("images"), dir_.file("labels"), 3); }).code, ErrorCode::kIo);

  Bytes negative = idx_header(0x09, {3});  // int8 labels: 0, -1, 1
  negative.insert(negative.end(), {0x00, 0xFF, 0x01});
  testing::write_plain(dir_.file("labels"), negative);
  EXPECT_EQ(thrown_by([&] { MnistDataset(dir_.file("images"), dir_.file("labels")); }).code, ErrorCode::kIo);
}

TEST_F(MnistDatasetTest, RejectsWrongRanksAndTypes) {
  const std::string labels = dir_.file("labels");
  testing::write_plain(labels, idx_u8({2}, {0, 1}));

  testing::write_plain(dir_.file("flat"), idx_u8({2, 6}, Bytes(12, 0)));
  const testing::Thrown flat = thrown_by([&] { MnistDataset(dir_.file("flat"), labels); });
  EXPECT_EQ(flat.code, ErrorCode::kIo);
  EXPECT_NE(flat.message.find("3-d uint8"), std::string::npos) << flat.message;

  Bytes floats = idx_header(0x0D, {2, 1, 1});
  floats.insert(floats.end(), 8, 0);
  testing::write_plain(dir_.file("floats"), floats);
  EXPECT_EQ(thrown_by([&] { MnistDataset(dir_.file("floats"), labels); }).code, ErrorCode::kIo);

  testing::write_plain(dir_.file("images"), images(2));
  testing::write_plain(dir_.file("labels2d"), idx_u8({2, 1}, {0, 1}));
  const testing::Thrown labels_2d = thrown_by([&] { MnistDataset(dir_.file("images"), dir_.file("labels2d")); });
  EXPECT_EQ(labels_2d.code, ErrorCode::kIo);
  EXPECT_NE(labels_2d.message.find(dir_.file("labels2d")), std::string::npos) << labels_2d.message;

  EXPECT_EQ(thrown_by([&] { MnistDataset(dir_.file("images"), labels, 0); }).code, ErrorCode::kInvalidArgument);
}

TEST_F(MnistDatasetTest, ErrorsFromTheReaderPassThrough) {
  testing::write_plain(dir_.file("images"), images(2));
  const testing::Thrown missing = thrown_by([&] { MnistDataset(dir_.file("images"), dir_.file("nope")); });
  EXPECT_EQ(missing.code, ErrorCode::kNotFound);
  testing::write_plain(dir_.file("labels"), idx_u8({2}, {0}));  // one label byte short
  EXPECT_EQ(thrown_by([&] { MnistDataset(dir_.file("images"), dir_.file("labels")); }).code, ErrorCode::kIo);
}

TEST(FashionMnistTest, RealFilesLoadWithBalancedClasses) {
  if (!testing::fashion_mnist_present()) {
    FAIL() << "Fashion-MNIST is not installed at " << testing::kFashionMnistDir
           << " (scripts/install-deps.sh installs the Debian package dataset-fashion-mnist)";
  }
  const MnistDataset train = MnistDataset::from_directory(testing::kFashionMnistDir, MnistSplit::kTrain);
  const MnistDataset test = MnistDataset::from_directory(testing::kFashionMnistDir, MnistSplit::kTest);
  ASSERT_EQ(train.size(), 60000);
  ASSERT_EQ(test.size(), 10000);
  EXPECT_EQ(train.sample_shape(), core::Shape({1, 28, 28}));
  EXPECT_EQ(train.images().shape(), core::Shape({60000, 1, 28, 28}));

  for (const auto& [dataset, per_class] : {std::pair{&train, 6000}, std::pair{&test, 1000}}) {
    std::array<int, 10> histogram{};
    const int32_t* labels = dataset->labels().data_as<int32_t>();
    for (int64_t i = 0; i < dataset->size(); ++i) ++histogram[static_cast<size_t>(labels[i])];
    for (size_t c = 0; c < histogram.size(); ++c) EXPECT_EQ(histogram[c], per_class) << "class " << c;
  }

  // The pixel mean the loader's default normalisation assumes.
  double sum = 0;
  const uint8_t* pixels = train.images().data_as<uint8_t>();
  for (size_t i = 0; i < train.images().size(); ++i) sum += pixels[i];
  EXPECT_NEAR(sum / static_cast<double>(train.images().size()) / 255.0, 0.2860, 5e-4);
}

}  // namespace
}  // namespace dt::data
