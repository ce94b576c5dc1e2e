#include "data/augmentation.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "data/batch_loader.h"
#include "data_test_util.h"

namespace dt::data {
namespace {

using core::ErrorCode;
using testing::thrown_by;

// A hand-made 2-channel 3x4 image: channel 0 holds 1..12 row by row,
// channel 1 holds 101..112.
const std::vector<uint8_t> kImage = {1,   2,   3,   4,   5,   6,   7,   8,   9,   10,  11,  12,
                                     101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112};

// Channel 0 maps v to v, channel 1 to 1000 + v, so a padded pixel reads 0
// in channel 0 and 1000 in channel 1.
std::array<std::array<float, 256>, 2> tables() {
  std::array<std::array<float, 256>, 2> t{};
  for (int v = 0; v < 256; ++v) {
    t[0][v] = static_cast<float>(v);
    t[1][v] = 1000.0f + static_cast<float>(v);
  }
  return t;
}

std::vector<float> transformed(int64_t padding, int64_t crop_y, int64_t crop_x, bool flip) {
  const auto t = tables();
  std::vector<float> out(kImage.size(), -1.0f);
  transform_image(kImage.data(), 2, 3, 4, padding, AugmentDraw{crop_y, crop_x, flip}, t.data(), out.data());
  return out;
}

TEST(AugmentationTest, CentreCropWithoutFlipIsTheImage) {
  EXPECT_EQ(transformed(1, 1, 1, false), (std::vector<float>{1,    2,    3,    4,     //
                                                             5,    6,    7,    8,     //
                                                             9,    10,   11,   12,    //
                                                             1101, 1102, 1103, 1104,  //
                                                             1105, 1106, 1107, 1108,  //
                                                             1109, 1110, 1111, 1112}));
  EXPECT_EQ(transformed(0, 0, 0, false), transformed(1, 1, 1, false));
}

TEST(AugmentationTest, CropAtTheTopLeftCornerShiftsInPadding) {
  EXPECT_EQ(transformed(1, 0, 0, false), (std::vector<float>{0,    0,    0,    0,    //
                                                             0,    1,    2,    3,    //
                                                             0,    5,    6,    7,    //
                                                             1000, 1000, 1000, 1000,  //
                                                             1000, 1101, 1102, 1103,  //
                                                             1000, 1105, 1106, 1107}));
}

TEST(AugmentationTest, CropAtTheBottomRightCorner) {
  EXPECT_EQ(transformed(1, 2, 2, false), (std::vector<float>{6,    7,    8,    0,     //
                                                             10,   11,   12,   0,     //
                                                             0,    0,    0,    0,     //
                                                             1106, 1107, 1108, 1000,  //
                                                             1110, 1111, 1112, 1000,  //
                                                             1000, 1000, 1000, 1000}));
}

TEST(AugmentationTest, WidePaddingCanLeaveOnlyACorner) {
  EXPECT_EQ(transformed(2, 0, 4, false), (std::vector<float>{0,    0,    0,    0,     //
                                                             0,    0,    0,    0,     //
                                                             3,    4,    0,    0,     //
                                                             1000, 1000, 1000, 1000,  //
                                                             1000, 1000, 1000, 1000,  //
                                                             1103, 1104, 1000, 1000}));
}

TEST(AugmentationTest, FlipMirrorsEveryRow) {
  EXPECT_EQ(transformed(0, 0, 0, true), (std::vector<float>{4,    3,    2,    1,     //
                                                            8,    7,    6,    5,     //
                                                            12,   11,   10,   9,     //
                                                            1104, 1103, 1102, 1101,  //
                                                            1108, 1107, 1106, 1105,  //
                                                            1112, 1111, 1110, 1109}));
}

TEST(AugmentationTest, CropComesBeforeTheFlip) {
  // The crop at (0, 2) is 0 0 0 0 / 2 3 4 0 / 6 7 8 0; then mirrored.
  EXPECT_EQ(transformed(1, 0, 2, true), (std::vector<float>{0,    0,    0,    0,     //
                                                            0,    4,    3,    2,     //
                                                            0,    8,    7,    6,     //
                                                            1000, 1000, 1000, 1000,  //
                                                            1000, 1104, 1103, 1102,  //
                                                            1000, 1108, 1107, 1106}));
}

TEST(AugmentationTest, DrawsCoverEveryOffsetAndFlipHalfTheTime) {
  Augmentation both;
  both.crop_padding = 4;
  both.horizontal_flip = true;
  std::set<std::pair<int64_t, int64_t>> offsets;
  int flips = 0;
  constexpr int kDraws = 20000;
  for (int position = 0; position < kDraws; ++position) {
    const AugmentDraw d = draw_augmentation(both, 7, 3, position);
    ASSERT_GE(d.crop_y, 0);
    ASSERT_LE(d.crop_y, 8);
    ASSERT_GE(d.crop_x, 0);
    ASSERT_LE(d.crop_x, 8);
    offsets.emplace(d.crop_y, d.crop_x);
    flips += d.flip ? 1 : 0;
  }
  EXPECT_EQ(offsets.size(), 81u);
  // 20000 fair coins: the standard deviation of the count is about 71.
  EXPECT_NEAR(flips, kDraws / 2, 400);

  Augmentation flip_only;
  flip_only.horizontal_flip = true;
  Augmentation crop_only;
  crop_only.crop_padding = 4;
  int flip_only_flips = 0;
  for (int position = 0; position < 1000; ++position) {
    const AugmentDraw f = draw_augmentation(flip_only, 7, 3, position);
    EXPECT_EQ(f.crop_y, 0);
    EXPECT_EQ(f.crop_x, 0);
    flip_only_flips += f.flip ? 1 : 0;
    EXPECT_FALSE(draw_augmentation(crop_only, 7, 3, position).flip);
  }
  EXPECT_GT(flip_only_flips, 400);
  EXPECT_LT(flip_only_flips, 600);
}

TEST(AugmentationTest, DrawsDependOnlyOnSeedEpochAndPosition) {
  Augmentation a;
  a.crop_padding = 4;
  a.horizontal_flip = true;
  auto same = [](const AugmentDraw& x, const AugmentDraw& y) {
    return x.crop_y == y.crop_y && x.crop_x == y.crop_x && x.flip == y.flip;
  };
  int seed_differs = 0, epoch_differs = 0;
  for (int position = 0; position < 1000; ++position) {
    EXPECT_TRUE(same(draw_augmentation(a, 11, 2, position), draw_augmentation(a, 11, 2, position)));
    seed_differs += same(draw_augmentation(a, 11, 2, position), draw_augmentation(a, 12, 2, position)) ? 0 : 1;
    epoch_differs += same(draw_augmentation(a, 11, 2, position), draw_augmentation(a, 11, 3, position)) ? 0 : 1;
  }
  // Two independent draws agree with probability 1/162.
  EXPECT_GT(seed_differs, 950);
  EXPECT_GT(epoch_differs, 950);
}

// The draws are integer arithmetic on SplitMix64 only, so these values hold
// on every platform and standard library; a change here changes every
// seeded run.
TEST(AugmentationTest, DrawsAreTheSameOnEveryPlatform) {
  Augmentation a;
  a.crop_padding = 4;
  a.horizontal_flip = true;
  const AugmentDraw pinned[] = {{1, 0, true},  {7, 6, false}, {5, 5, false}, {1, 1, false},
                                {3, 8, false}, {4, 5, false}, {7, 7, false}, {3, 2, true}};
  for (int position = 0; position < 8; ++position) {
    const AugmentDraw d = draw_augmentation(a, 7, 3, position);
    EXPECT_EQ(d.crop_y, pinned[position].crop_y) << position;
    EXPECT_EQ(d.crop_x, pinned[position].crop_x) << position;
    EXPECT_EQ(d.flip, pinned[position].flip) << position;
  }
}

// Sample i: a 3x8x8 image whose bytes depend on i, channel, row and column;
// label i.
class PatternDataset final : public Dataset {
 public:
  explicit PatternDataset(int64_t size, core::Shape shape = {3, 8, 8}) : size_(size), shape_(shape) {}
  int64_t size() const override { return size_; }
  core::Shape sample_shape() const override { return shape_; }
  int32_t read_sample(int64_t index, uint8_t* pixels) const override {
    for (int64_t p = 0; p < shape_.numel(); ++p) pixels[p] = static_cast<uint8_t>((index * 37 + p * 5) % 256);
    return static_cast<int32_t>(index);
  }

 private:
  int64_t size_;
  core::Shape shape_;
};

LoaderOptions augmented(uint64_t seed) {
  LoaderOptions options;
  options.batch_size = 5;
  options.mean = 0.25f;
  options.std = 0.5f;
  options.augmentation.crop_padding = 2;
  options.augmentation.horizontal_flip = true;
  options.augment_seed = seed;
  return options;
}

std::vector<std::vector<float>> read_epoch(BatchLoader& loader, int64_t epoch) {
  loader.start_epoch(epoch);
  std::vector<std::vector<float>> batches;
  Batch batch;
  while (loader.next(batch)) {
    const float* data = batch.images.data_as<float>();
    batches.emplace_back(data, data + batch.images.size());
  }
  return batches;
}

// Every sample of the batches is its image transformed with the draws of
// stream augment_seed + part_index at its epoch and position.
TEST(AugmentedLoaderTest, EachSampleGetsTheDrawsOfItsPartEpochAndPosition) {
  auto dataset = std::make_shared<PatternDataset>(40);
  const LoaderOptions options = augmented(5);
  BatchLoader loader(dataset, SplitSampler(40, 2, 1, true, 9), options);
  std::array<std::array<float, 256>, 3> t{};
  for (int v = 0; v < 256; ++v) t[0][v] = t[1][v] = t[2][v] = (static_cast<float>(v) / 255.0f - 0.25f) / 0.5f;

  loader.start_epoch(1);
  Batch batch;
  int64_t position = 0;
  int flipped = 0, shifted = 0;
  std::vector<uint8_t> raw(192);
  std::vector<float> expected(192);
  while (loader.next(batch)) {
    ASSERT_EQ(batch.images.shape()[1], 3);
    for (int64_t i = 0; i < batch.size(); ++i, ++position) {
      const int32_t index = batch.labels.data_as<int32_t>()[i];
      dataset->read_sample(index, raw.data());
      const AugmentDraw draw = draw_augmentation(options.augmentation, 5 + 1, 1, position);
      transform_image(raw.data(), 3, 8, 8, 2, draw, t.data(), expected.data());
      const float* got = batch.images.data_as<float>() + i * 192;
      EXPECT_EQ(std::vector<float>(got, got + 192), expected) << "position " << position;
      flipped += draw.flip ? 1 : 0;
      shifted += draw.crop_y != 2 || draw.crop_x != 2 ? 1 : 0;
    }
  }
  EXPECT_EQ(position, 20);
  // Not a vacuous check: the epoch did flip and shift some samples.
  EXPECT_GT(flipped, 0);
  EXPECT_LT(flipped, 20);
  EXPECT_GT(shifted, 0);
}

TEST(AugmentedLoaderTest, TheSameSeedGivesTheSameBatchesOnEveryRun) {
  auto dataset = std::make_shared<PatternDataset>(30);
  BatchLoader first(dataset, SplitSampler(30, 1, 0, true, 4), augmented(21));
  BatchLoader second(dataset, SplitSampler(30, 1, 0, true, 4), augmented(21));
  const auto first0 = read_epoch(first, 0);
  const auto first1 = read_epoch(first, 1);
  EXPECT_EQ(read_epoch(second, 0), first0);
  EXPECT_EQ(read_epoch(second, 1), first1);
  // A restarted epoch repeats its draws: they follow the position, not the
  // samples the thread happened to prepare before.
  second.start_epoch(0);
  Batch batch;
  ASSERT_TRUE(second.next(batch));
  EXPECT_EQ(read_epoch(second, 0), first0);

  // Another seed, and without shuffling another epoch, augment differently.
  BatchLoader other(dataset, SplitSampler(30, 1, 0, true, 4), augmented(22));
  EXPECT_NE(read_epoch(other, 0), first0);
  BatchLoader unshuffled(dataset, SplitSampler(30), augmented(21));
  EXPECT_NE(read_epoch(unshuffled, 0), read_epoch(unshuffled, 1));
}

TEST(AugmentedLoaderTest, RejectsSamplesItCannotTransformAndBadPadding) {
  const auto flat = thrown_by([] { BatchLoader(std::make_shared<PatternDataset>(4, core::Shape{12}), SplitSampler(4), augmented(0)); });
  EXPECT_EQ(flat.code, ErrorCode::kInvalidArgument);
  EXPECT_NE(flat.message.find("augmentation needs (channels, height, width) samples"), std::string::npos)
      << flat.message;
  for (const int64_t padding : {int64_t{-1}, int64_t{9}}) {
    LoaderOptions options = augmented(0);
    options.augmentation.crop_padding = padding;
    const auto e = thrown_by([&] { BatchLoader(std::make_shared<PatternDataset>(4), SplitSampler(4), options); });
    EXPECT_EQ(e.code, ErrorCode::kInvalidArgument);
    EXPECT_NE(e.message.find("crop_padding must be in [0, 8]"), std::string::npos) << e.message;
  }
  // The largest padding is allowed, and a flat sample loads without augmentation.
  LoaderOptions widest = augmented(0);
  widest.augmentation.crop_padding = 8;
  BatchLoader ok(std::make_shared<PatternDataset>(4), SplitSampler(4), widest);
  EXPECT_EQ(read_epoch(ok, 0).size(), 1u);
  BatchLoader plain(std::make_shared<PatternDataset>(4, core::Shape{12}), SplitSampler(4), LoaderOptions{});
  EXPECT_EQ(read_epoch(plain, 0).size(), 1u);
}

}  // namespace
}  // namespace dt::data
