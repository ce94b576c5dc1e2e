// Random files and random mutations of valid ones, fed to the CIFAR reader
// as both variants. A bounded, seeded corpus, so the test is a plain
// GoogleTest that fails the same way every run: the reader never crashes,
// every file it refuses is a kIo error naming the file, and every file it
// accepts reads back with labels in range.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/cifar_dataset.h"

namespace dt::data {
namespace {

using core::Error;
using core::ErrorCode;

class CifarReaderFuzz : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/dt-cifar-fuzz.XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
    path_ = dir_ + "/input.bin";
  }
  void TearDown() override {
    std::remove(path_.c_str());
    ::rmdir(dir_.c_str());
  }

  // Reads bytes as `variant`; counts what happened.
  void feed(const std::vector<unsigned char>& bytes, CifarVariant variant) {
    {
      std::ofstream out(path_, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
      ASSERT_TRUE(out.good());
    }
    try {
      const CifarDataset dataset({path_}, variant);
      ++accepted_;
      ASSERT_EQ(static_cast<size_t>(dataset.size()) * CifarDataset::record_bytes(variant), bytes.size());
      std::vector<uint8_t> pixels(CifarDataset::kPixelBytes);
      for (int64_t i = 0; i < dataset.size(); ++i) {
        const int32_t label = dataset.read_sample(i, pixels.data());
        ASSERT_GE(label, 0);
        ASSERT_LT(label, dataset.num_classes());
      }
    } catch (const Error& e) {
      ++refused_;
      ASSERT_EQ(e.code(), ErrorCode::kIo) << e.what();
      ASSERT_NE(std::string(e.what()).find(path_), std::string::npos) << e.what();
    }
  }

  std::string dir_;
  std::string path_;
  int accepted_ = 0;
  int refused_ = 0;
};

TEST_F(CifarReaderFuzz, RandomAndMutatedFilesNeverCrash) {
  std::mt19937 rng(20261126);
  auto byte = [&] { return static_cast<unsigned char>(rng() & 0xFF); };
  for (const CifarVariant variant : {CifarVariant::kCifar10, CifarVariant::kCifar100}) {
    const size_t record = CifarDataset::record_bytes(variant);
    // A valid file of three records: labels in range, random pixels.
    std::vector<unsigned char> valid;
    for (int r = 0; r < 3; ++r) {
      if (variant == CifarVariant::kCifar100) valid.push_back(static_cast<unsigned char>(rng() % 20));
      valid.push_back(static_cast<unsigned char>(rng() % static_cast<unsigned>(CifarDataset::num_classes(variant))));
      for (size_t p = 0; p < CifarDataset::kPixelBytes; ++p) valid.push_back(byte());
    }
    for (int round = 0; round < 60; ++round) {
      // Random bytes of a random length, sometimes a whole number of records.
      std::vector<unsigned char> noise(rng() % 2 == 0 ? record * (1 + rng() % 3) : rng() % (4 * record));
      for (unsigned char& b : noise) b = byte();
      feed(noise, variant);
      if (HasFatalFailure()) return;

      // The valid file cut short, extended, or with one byte changed.
      std::vector<unsigned char> mutated = valid;
      switch (rng() % 3) {
        case 0:
          mutated.resize(rng() % mutated.size());
          break;
        case 1:
          for (size_t extra = 1 + rng() % 100; extra > 0; --extra) mutated.push_back(byte());
          break;
        default:
          mutated[(rng() % 3) * record + rng() % CifarDataset::label_bytes(variant)] = byte();
          break;
      }
      feed(mutated, variant);
      if (HasFatalFailure()) return;
    }
  }
  // Both outcomes were exercised.
  EXPECT_GT(accepted_, 10);
  EXPECT_GT(refused_, 10);
}

}  // namespace
}  // namespace dt::data
