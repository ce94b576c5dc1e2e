#include "data/cifar_dataset.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/batch_loader.h"
#include "cifar_test_util.h"

namespace dt::data {
namespace {

using core::ErrorCode;
using testing::Bytes;
using testing::cifar100_file;
using testing::cifar10_file;
using testing::cifar_pixel;
using testing::thrown_by;
using testing::write_plain;

constexpr size_t kRecord10 = 3073;
constexpr size_t kRecord100 = 3074;

// Every pixel of sample `index` is that of hand-made image `image`.
void expect_image(const CifarDataset& dataset, int64_t index, int image, int32_t label) {
  std::vector<uint8_t> pixels(CifarDataset::kPixelBytes);
  EXPECT_EQ(dataset.read_sample(index, pixels.data()), label) << "sample " << index;
  size_t mismatches = 0;
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 32; ++y) {
      for (int x = 0; x < 32; ++x) mismatches += pixels[(c * 32 + y) * 32 + x] != cifar_pixel(image, c, y, x);
    }
  }
  EXPECT_EQ(mismatches, 0u) << "sample " << index;
}

class CifarDatasetTest : public ::testing::Test {
 protected:
  testing::TempDir dir_;
};

TEST_F(CifarDatasetTest, ReadsCifar10RecordsInFileOrder) {
  write_plain(dir_.file("a.bin"), cifar10_file({3, 0}, 0));
  write_plain(dir_.file("b.bin"), cifar10_file({9}, 2));
  const CifarDataset dataset({dir_.file("a.bin"), dir_.file("b.bin")}, CifarVariant::kCifar10);
  EXPECT_EQ(dataset.size(), 3);
  EXPECT_EQ(dataset.sample_shape(), (core::Shape{3, 32, 32}));
  EXPECT_EQ(dataset.num_classes(), 10);
  expect_image(dataset, 0, 0, 3);
  expect_image(dataset, 1, 1, 0);
  expect_image(dataset, 2, 2, 9);
  // Spot checks against bytes written out by hand: (c, y, x) = (0, 0, 0),
  // (1, 0, 0) and (2, 31, 31) of image 2.
  std::vector<uint8_t> pixels(CifarDataset::kPixelBytes);
  dataset.read_sample(2, pixels.data());
  EXPECT_EQ(pixels[0], 74);
  EXPECT_EQ(pixels[1024], 159);
  EXPECT_EQ(pixels[3071], 236);  // (74 + 170 + 217 + 31) % 256
  EXPECT_EQ(thrown_by([&] { dataset.read_sample(3, pixels.data()); }).code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(thrown_by([&] { dataset.read_sample(-1, pixels.data()); }).code, ErrorCode::kInvalidArgument);
}

TEST_F(CifarDatasetTest, Cifar100TakesTheFineLabel) {
  write_plain(dir_.file("train.bin"), cifar100_file({{19, 99}, {0, 42}}, 5));
  const CifarDataset dataset({dir_.file("train.bin")}, CifarVariant::kCifar100);
  EXPECT_EQ(dataset.size(), 2);
  EXPECT_EQ(dataset.num_classes(), 100);
  expect_image(dataset, 0, 5, 99);
  expect_image(dataset, 1, 6, 42);
}

TEST_F(CifarDatasetTest, FromDirectoryFindsTheStandardNames) {
  for (int i = 1; i <= 5; ++i) {
    write_plain(dir_.file("data_batch_" + std::to_string(i) + ".bin"), cifar10_file({static_cast<unsigned char>(i)}, i));
  }
  write_plain(dir_.file("test_batch.bin"), cifar10_file({7, 8}, 100));
  write_plain(dir_.file("train.bin"), cifar100_file({{1, 2}, {3, 4}, {5, 6}}, 200));
  write_plain(dir_.file("test.bin"), cifar100_file({{7, 8}}, 300));

  const auto train = CifarDataset::from_directory(dir_.path(), CifarVariant::kCifar10, CifarSplit::kTrain);
  ASSERT_EQ(train.size(), 5);
  for (int i = 0; i < 5; ++i) expect_image(train, i, i + 1, i + 1);
  const auto test = CifarDataset::from_directory(dir_.path(), CifarVariant::kCifar10, CifarSplit::kTest);
  ASSERT_EQ(test.size(), 2);
  expect_image(test, 1, 101, 8);
  const auto train100 = CifarDataset::from_directory(dir_.path(), CifarVariant::kCifar100, CifarSplit::kTrain);
  ASSERT_EQ(train100.size(), 3);
  expect_image(train100, 2, 202, 6);
  const auto test100 = CifarDataset::from_directory(dir_.path(), CifarVariant::kCifar100, CifarSplit::kTest);
  ASSERT_EQ(test100.size(), 1);
  expect_image(test100, 0, 300, 8);
}

TEST_F(CifarDatasetTest, FromDirectoryLooksInsideTheUnpackedArchive) {
  const std::string inner = dir_.file("cifar-10-batches-bin");
  ASSERT_EQ(::mkdir(inner.c_str(), 0700), 0);
  write_plain(inner + "/test_batch.bin", cifar10_file({4}, 9));
  const auto test = CifarDataset::from_directory(dir_.path(), CifarVariant::kCifar10, CifarSplit::kTest);
  EXPECT_EQ(test.size(), 1);
  expect_image(test, 0, 9, 4);
  ::unlink((inner + "/test_batch.bin").c_str());
  ::rmdir(inner.c_str());
}

TEST_F(CifarDatasetTest, MissingFilesAreNotFoundNamingThem) {
  const auto none = thrown_by([&] { CifarDataset::from_directory(dir_.path(), CifarVariant::kCifar10, CifarSplit::kTest); });
  EXPECT_EQ(none.code, ErrorCode::kNotFound);
  EXPECT_NE(none.message.find(dir_.file("test_batch.bin")), std::string::npos) << none.message;
  EXPECT_NE(none.message.find(dir_.file("cifar-10-batches-bin/test_batch.bin")), std::string::npos) << none.message;

  // The first training file is there, the third is not.
  for (int i : {1, 2, 4, 5}) write_plain(dir_.file("data_batch_" + std::to_string(i) + ".bin"), cifar10_file({0}, 0));
  const auto third = thrown_by([&] { CifarDataset::from_directory(dir_.path(), CifarVariant::kCifar10, CifarSplit::kTrain); });
  EXPECT_EQ(third.code, ErrorCode::kNotFound);
  EXPECT_NE(third.message.find(dir_.file("data_batch_3.bin") + " does not exist"), std::string::npos) << third.message;

  EXPECT_EQ(thrown_by([] { CifarDataset({}, CifarVariant::kCifar10); }).code, ErrorCode::kInvalidArgument);
}

TEST_F(CifarDatasetTest, TruncatedFileNamesTheFileAndTheOffsetOfThePartialRecord) {
  Bytes bytes = cifar10_file({1, 2}, 0);
  bytes.resize(2 * kRecord10 - 1000);
  write_plain(dir_.file("cut.bin"), bytes);
  const auto e = thrown_by([&] { CifarDataset({dir_.file("cut.bin")}, CifarVariant::kCifar10); });
  EXPECT_EQ(e.code, ErrorCode::kIo);
  EXPECT_NE(e.message.find("CIFAR file " + dir_.file("cut.bin") + " is truncated"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("5146 bytes are not a whole number of 3073-byte records"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("the record at byte offset 3073 has only 2073 bytes"), std::string::npos) << e.message;

  // A CIFAR-100 file read as CIFAR-10: two 3074-byte records are 6148 bytes.
  write_plain(dir_.file("train.bin"), cifar100_file({{0, 0}, {0, 0}}, 0));
  const auto wrong = thrown_by([&] { CifarDataset({dir_.file("train.bin")}, CifarVariant::kCifar10); });
  EXPECT_EQ(wrong.code, ErrorCode::kIo);
  EXPECT_NE(wrong.message.find("the record at byte offset 6146 has only 2 bytes"), std::string::npos) << wrong.message;
}

TEST_F(CifarDatasetTest, LabelOutOfRangeNamesTheFileAndItsByteOffset) {
  write_plain(dir_.file("ten.bin"), cifar10_file({9, 10}, 0));
  const auto ten = thrown_by([&] { CifarDataset({dir_.file("ten.bin")}, CifarVariant::kCifar10); });
  EXPECT_EQ(ten.code, ErrorCode::kIo);
  EXPECT_NE(ten.message.find("CIFAR file " + dir_.file("ten.bin") + ": label 10 at byte offset 3073 (record 1) is "
                                                                     "outside [0, 10)"),
            std::string::npos)
      << ten.message;

  write_plain(dir_.file("fine.bin"), cifar100_file({{0, 0}, {3, 100}}, 0));
  const auto fine = thrown_by([&] { CifarDataset({dir_.file("fine.bin")}, CifarVariant::kCifar100); });
  EXPECT_EQ(fine.code, ErrorCode::kIo);
  EXPECT_NE(fine.message.find("fine label 100 at byte offset " + std::to_string(kRecord100 + 1) +
                              " (record 1) is outside [0, 100)"),
            std::string::npos)
      << fine.message;

  write_plain(dir_.file("coarse.bin"), cifar100_file({{20, 0}}, 0));
  const auto coarse = thrown_by([&] { CifarDataset({dir_.file("coarse.bin")}, CifarVariant::kCifar100); });
  EXPECT_EQ(coarse.code, ErrorCode::kIo);
  EXPECT_NE(coarse.message.find("coarse label 20 at byte offset 0 (record 0) is outside [0, 20)"), std::string::npos)
      << coarse.message;
}

TEST_F(CifarDatasetTest, EmptyFileAndDirectoryAreIoErrors) {
  write_plain(dir_.file("empty.bin"), {});
  const auto empty = thrown_by([&] { CifarDataset({dir_.file("empty.bin")}, CifarVariant::kCifar10); });
  EXPECT_EQ(empty.code, ErrorCode::kIo);
  EXPECT_NE(empty.message.find(dir_.file("empty.bin") + " is empty"), std::string::npos) << empty.message;
  const auto folder = thrown_by([&] { CifarDataset({dir_.path()}, CifarVariant::kCifar10); });
  EXPECT_EQ(folder.code, ErrorCode::kIo);
  EXPECT_NE(folder.message.find("is not a regular file"), std::string::npos) << folder.message;
}

// (B, 3, 32, 32) batches, each channel normalised with its own statistics.
TEST_F(CifarDatasetTest, LoaderYieldsPerChannelNormalisedBatches) {
  write_plain(dir_.file("test_batch.bin"), cifar10_file({6, 1, 2}, 40));
  auto dataset = std::make_shared<const CifarDataset>(
      CifarDataset::from_directory(dir_.path(), CifarVariant::kCifar10, CifarSplit::kTest));
  LoaderOptions options;
  options.batch_size = 2;
  options.channel_mean.assign(CifarDataset::kMean.begin(), CifarDataset::kMean.end());
  options.channel_std.assign(CifarDataset::kStd.begin(), CifarDataset::kStd.end());
  BatchLoader loader(dataset, SplitSampler(3), options);
  loader.start_epoch(0);
  Batch batch;
  int image = 40;
  for (const int64_t expected_size : {2, 1}) {
    ASSERT_TRUE(loader.next(batch));
    ASSERT_EQ(batch.images.shape(), (core::Shape{expected_size, 3, 32, 32}));
    const float* data = batch.images.data_as<float>();
    size_t mismatches = 0;
    for (int64_t i = 0; i < expected_size; ++i, ++image) {
      for (int c = 0; c < 3; ++c) {
        for (int y = 0; y < 32; ++y) {
          for (int x = 0; x < 32; ++x) {
            const float v = static_cast<float>(cifar_pixel(image, c, y, x));
            const float expected = (v / 255.0f - CifarDataset::kMean[c]) / CifarDataset::kStd[c];
            mismatches += data[((i * 3 + c) * 32 + y) * 32 + x] != expected;
          }
        }
      }
    }
    EXPECT_EQ(mismatches, 0u);
  }
  EXPECT_EQ(batch.labels.data_as<int32_t>()[0], 2);
  // Image 40's first red byte is 40 * 37 % 256 = 200: (200 / 255 - 0.4914) / 0.2470.
  loader.start_epoch(0);
  ASSERT_TRUE(loader.next(batch));
  EXPECT_NEAR(batch.images.data_as<float>()[0], 1.18589f, 1e-4f);
  EXPECT_EQ(batch.labels.data_as<int32_t>()[0], 6);
}

TEST_F(CifarDatasetTest, LoaderRejectsStatisticsThatDoNotMatchTheChannels) {
  write_plain(dir_.file("a.bin"), cifar10_file({0}, 0));
  auto dataset = std::make_shared<const CifarDataset>(std::vector<std::string>{dir_.file("a.bin")},
                                                      CifarVariant::kCifar10);
  LoaderOptions options;
  options.channel_mean = {0.5f};
  options.channel_std = {0.5f};
  const auto e = thrown_by([&] { BatchLoader(dataset, SplitSampler(1), options); });
  EXPECT_EQ(e.code, ErrorCode::kInvalidArgument);
  EXPECT_NE(e.message.find("the samples have 3 channels, the options 1 means and 1 stds"), std::string::npos)
      << e.message;
  options.channel_mean = {0.5f, 0.5f, 0.5f};
  options.channel_std = {0.5f, 0.0f, 0.5f};
  EXPECT_NE(thrown_by([&] { BatchLoader(dataset, SplitSampler(1), options); }).message.find("std of channel 1"),
            std::string::npos);
}

}  // namespace
}  // namespace dt::data
