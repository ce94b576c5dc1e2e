// The image folder dataset: classes and files in name order, RGB planes
// resized, normalised batches, corrupt files and bad folders; the random
// resized crop. PNG and JPEG decoding: image_decode_test.cc.
#include <gtest/gtest.h>

#include "image_folder_test_util.h"

namespace dt::data {
namespace {

using namespace image_folder_test;

// --- the folder -------------------------------------------------------------

class ImageFolderDatasetTest : public ::testing::Test {
 protected:
  // root/cat: b.png (5x7 pattern), a.JPG (8x8 grey 128); root/dog: x.png
  // (2x2), plus what the listing must skip or ignore.
  void write_standard_tree() {
    tree_.mkdir("cat");
    tree_.mkdir("dog");
    tree_.mkdir(".cache");
    write_plain(tree_.file("cat/b.png"), png_bytes(pattern_image(5, 7, 3)));
    write_plain(tree_.file("cat/a.JPG"), jpeg_bytes(TestImage{8, 8, 1, Bytes(64, 128)}));
    write_plain(tree_.file("cat/.DS_Store"), {1, 2, 3});
    write_plain(tree_.file("dog/x.png"), png_bytes(TestImage{2, 2, 3, {0, 10, 20, 100, 110, 120,  //
                                                                       200, 210, 220, 40, 50, 60}}));
    write_plain(tree_.file("README"), {'h', 'i'});
  }
  TempTree tree_;
};

TEST_F(ImageFolderDatasetTest, ClassesAndFilesInNameOrder) {
  write_standard_tree();
  const ImageFolderDataset dataset(tree_.path(), 4, 6);
  EXPECT_EQ(dataset.classes(), (std::vector<std::string>{"cat", "dog"}));
  ASSERT_EQ(dataset.size(), 3);
  EXPECT_EQ(dataset.sample_shape(), (core::Shape{3, 4, 6}));
  EXPECT_EQ(dataset.path(0), tree_.file("cat/a.JPG"));
  EXPECT_EQ(dataset.path(1), tree_.file("cat/b.png"));
  EXPECT_EQ(dataset.path(2), tree_.file("dog/x.png"));
  EXPECT_EQ(dataset.label(0), 0);
  EXPECT_EQ(dataset.label(1), 0);
  EXPECT_EQ(dataset.label(2), 1);
  std::vector<uint8_t> pixels(3 * 4 * 6);
  EXPECT_EQ(dataset.read_sample(2, pixels.data()), 1);
  EXPECT_EQ(thrown_by([&] { dataset.read_sample(3, pixels.data()); }).code, ErrorCode::kInvalidArgument);
}

// Read at its own size a PNG is its pixels, in planes; resized, the
// bilinear kernel's exact values; the grey JPEG comes out grey.
TEST_F(ImageFolderDatasetTest, SamplesAreRgbPlanesResizedToTheGivenSize) {
  write_standard_tree();
  const ImageFolderDataset native(tree_.path(), 5, 7);
  std::vector<uint8_t> pixels(3 * 5 * 7);
  ASSERT_EQ(native.read_sample(1, pixels.data()), 0);
  size_t mismatches = 0;
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 5; ++y) {
      for (int x = 0; x < 7; ++x) mismatches += pixels[(c * 5 + y) * 7 + x] != pattern_pixel(y, x, c);
    }
  }
  EXPECT_EQ(mismatches, 0u);
  ASSERT_EQ(native.read_sample(0, pixels.data()), 0);
  for (uint8_t v : pixels) ASSERT_NEAR(v, 128, 1);

  const ImageFolderDataset big(tree_.path(), 4, 4);
  std::vector<uint8_t> up(3 * 4 * 4);
  ASSERT_EQ(big.read_sample(2, up.data()), 1);
  // Red: 0 100 / 200 40, as ImageResizeTest.UpscalesWithAlignedPixelCentres.
  EXPECT_EQ(std::vector<uint8_t>(up.begin(), up.begin() + 16),
            (std::vector<uint8_t>{0, 25, 75, 100, 50, 59, 76, 85, 150, 126, 79, 55, 200, 160, 80, 40}));
  // Green is red + 10 where no rounding differs: its corners.
  EXPECT_EQ(up[16], 10);
  EXPECT_EQ(up[16 + 3], 110);
  EXPECT_EQ(up[16 + 12], 210);
  EXPECT_EQ(up[16 + 15], 50);
}

TEST_F(ImageFolderDatasetTest, LoaderYieldsNormalisedBatchesOfTheGivenSize) {
  write_standard_tree();
  auto dataset = std::make_shared<const ImageFolderDataset>(tree_.path(), 5, 7);
  LoaderOptions options;
  options.batch_size = 2;
  options.channel_mean.assign(ImageFolderDataset::kMean.begin(), ImageFolderDataset::kMean.end());
  options.channel_std.assign(ImageFolderDataset::kStd.begin(), ImageFolderDataset::kStd.end());
  BatchLoader loader(dataset, SplitSampler(3), options);
  loader.start_epoch(0);
  Batch batch;
  ASSERT_TRUE(loader.next(batch));
  ASSERT_EQ(batch.images.shape(), (core::Shape{2, 3, 5, 7}));
  EXPECT_EQ(batch.labels.data_as<int32_t>()[1], 0);
  const float* b = batch.images.data_as<float>() + 3 * 5 * 7;  // sample 1: cat/b.png
  size_t mismatches = 0;
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 5; ++y) {
      for (int x = 0; x < 7; ++x) {
        const float v = static_cast<float>(pattern_pixel(y, x, c));
        mismatches += b[(c * 5 + y) * 7 + x] != (v / 255.0f - ImageFolderDataset::kMean[c]) / ImageFolderDataset::kStd[c];
      }
    }
  }
  EXPECT_EQ(mismatches, 0u);
  ASSERT_TRUE(loader.next(batch));
  ASSERT_EQ(batch.images.shape(), (core::Shape{1, 3, 5, 7}));
  EXPECT_EQ(batch.labels.data_as<int32_t>()[0], 1);
  EXPECT_FALSE(loader.next(batch));
}

// A bad file fails its batch at next(), naming it; the listing read none.
TEST_F(ImageFolderDatasetTest, ACorruptFileFailsItsBatchNamingIt) {
  write_standard_tree();
  const Bytes whole = png_bytes(pattern_image(8, 8, 3));
  write_plain(tree_.file("dog/y.png"), Bytes(whole.begin(), whole.begin() + 40));
  auto dataset = std::make_shared<const ImageFolderDataset>(tree_.path(), 4, 4);
  LoaderOptions options;
  options.batch_size = 2;
  BatchLoader loader(dataset, SplitSampler(4), options);
  loader.start_epoch(0);
  Batch batch;
  ASSERT_TRUE(loader.next(batch));
  const auto e = thrown_by([&] { loader.next(batch); });
  EXPECT_EQ(e.code, ErrorCode::kIo);
  EXPECT_TRUE(has(e.message, tree_.file("dog/y.png"))) << e.message;
}

TEST_F(ImageFolderDatasetTest, BadFoldersAreClearErrors) {
  const auto missing = thrown_by([&] { ImageFolderDataset(tree_.file("nowhere"), 4, 4); });
  EXPECT_EQ(missing.code, ErrorCode::kNotFound);
  EXPECT_TRUE(has(missing.message, tree_.file("nowhere"))) << missing.message;

  write_plain(tree_.file("LICENSE"), {'x'});
  const auto empty = thrown_by([&] { ImageFolderDataset(tree_.path(), 4, 4); });
  EXPECT_EQ(empty.code, ErrorCode::kIo);
  EXPECT_TRUE(has(empty.message, tree_.path() + " holds no class folder")) << empty.message;

  tree_.mkdir("cat");
  const auto no_images = thrown_by([&] { ImageFolderDataset(tree_.path(), 4, 4); });
  EXPECT_EQ(no_images.code, ErrorCode::kIo);
  EXPECT_TRUE(has(no_images.message, "class folder " + tree_.file("cat") + " holds no image")) << no_images.message;

  write_plain(tree_.file("cat/a.png"), png_bytes(pattern_image(2, 2, 3)));
  write_plain(tree_.file("cat/notes.txt"), {'x'});
  const auto other = thrown_by([&] { ImageFolderDataset(tree_.path(), 4, 4); });
  EXPECT_EQ(other.code, ErrorCode::kIo);
  EXPECT_TRUE(has(other.message, tree_.file("cat/notes.txt") + " is not an image")) << other.message;
  std::remove(tree_.file("cat/notes.txt").c_str());

  tree_.mkdir("cat/nested");
  EXPECT_TRUE(has(thrown_by([&] { ImageFolderDataset(tree_.path(), 4, 4); }).message,
                  tree_.file("cat/nested") + " is not a file"));
  ::rmdir(tree_.file("cat/nested").c_str());

  EXPECT_EQ(ImageFolderDataset(tree_.path(), 4, 4).size(), 1);
  for (const auto& [h, w] : std::vector<std::pair<int64_t, int64_t>>{{0, 4}, {4, -1}, {65501, 4}}) {
    EXPECT_EQ(thrown_by([&] { ImageFolderDataset(tree_.path(), h, w); }).code, ErrorCode::kInvalidArgument);
  }
  EXPECT_EQ(thrown_by([&] { ImageFolderDataset(tree_.file("LICENSE"), 4, 4); }).code, ErrorCode::kIo);
}

// --- the random resized crop ---------------------------------------------------

TEST(ImageRandomResizedCropTest, BoxesFitAndFollowTheRanges) {
  Augmentation augmentation;
  augmentation.random_resized_crop = true;
  int centred = 0;
  for (int64_t position = 0; position < 500; ++position) {
    const CropBox box = draw_resized_crop(augmentation, 3, 0, position, 120, 90);
    ASSERT_GE(box.y, 0);
    ASSERT_GE(box.x, 0);
    ASSERT_GE(box.height, 1);
    ASSERT_GE(box.width, 1);
    ASSERT_LE(box.y + box.height, 120);
    ASSERT_LE(box.x + box.width, 90);
    const double area = static_cast<double>(box.height * box.width) / (120.0 * 90.0);
    const double ratio = static_cast<double>(box.width) / static_cast<double>(box.height);
    if (box.height == 120 && box.width == 90) {
      ++centred;  // the fallback: 90 / 120 is 3/4, inside the range
      continue;
    }
    // Rounding each side moves the area and ratio a little.
    EXPECT_GE(area, 0.07) << position;
    EXPECT_LE(ratio, 4.0 / 3.0 * 1.2) << position;
    EXPECT_GE(ratio, 3.0 / 4.0 / 1.2) << position;
    // The same (seed, epoch, position): the same box.
    EXPECT_TRUE(same(draw_resized_crop(augmentation, 3, 0, position, 120, 90), box)) << position;
  }
  EXPECT_LT(centred, 50);
  EXPECT_FALSE(same(draw_resized_crop(augmentation, 4, 0, 0, 120, 90), draw_resized_crop(augmentation, 3, 0, 0, 120, 90)));
}

// Whole-image area at ratio 1 never fits a 10x20 image (14x14 > 10 high):
// after 10 tries, the centred box with the ratio clamped, 10x10.
TEST(ImageRandomResizedCropTest, FallsBackToTheCentredClampedBox) {
  Augmentation augmentation;
  augmentation.random_resized_crop = true;
  augmentation.resized_crop_scale = {1.0, 1.0};
  augmentation.resized_crop_ratio = {1.0, 1.0};
  const CropBox box = draw_resized_crop(augmentation, 0, 0, 0, 10, 20);
  EXPECT_EQ(box.y, 0);
  EXPECT_EQ(box.x, 5);
  EXPECT_EQ(box.height, 10);
  EXPECT_EQ(box.width, 10);
  // The whole area at ratio 3/4 fits a 40x30 image exactly.
  augmentation.resized_crop_ratio = {0.75, 0.75};
  const CropBox whole = draw_resized_crop(augmentation, 0, 0, 0, 40, 30);
  EXPECT_EQ(whole.y, 0);
  EXPECT_EQ(whole.x, 0);
  EXPECT_EQ(whole.height, 40);
  EXPECT_EQ(whole.width, 30);
}

class ImageRandomResizedCropLoaderTest : public ImageFolderDatasetTest {
 protected:
  // One epoch of the folder's 3 images, 16x16 of distinct pixels each,
  // as 8x8 random resized crops.
  std::vector<float> epoch(uint64_t seed, int64_t index_epoch, bool flip = false) {
    LoaderOptions options = loader_options(seed);
    options.augmentation.horizontal_flip = flip;
    BatchLoader loader(dataset(), SplitSampler(3), options);
    loader.start_epoch(index_epoch);
    std::vector<float> all;
    Batch batch;
    while (loader.next(batch)) {
      const float* data = batch.images.data_as<float>();
      all.insert(all.end(), data, data + batch.images.shape().numel());
    }
    return all;
  }
  void write_tree() {
    tree_.mkdir("a");
    tree_.mkdir("b");
    for (const char* name : {"a/0.png", "a/1.png", "b/2.png"}) {
      TestImage image = pattern_image(16, 20, 3);
      for (auto& v : image.pixels) v = static_cast<uint8_t>(v + name[2] * 7);
      images_.push_back(image);
      write_plain(tree_.file(name), png_bytes(image));
    }
  }
  std::shared_ptr<const ImageFolderDataset> dataset() {
    return std::make_shared<const ImageFolderDataset>(tree_.path(), 8, 8);
  }
  static LoaderOptions loader_options(uint64_t seed) {
    LoaderOptions options;
    options.batch_size = 2;
    options.mean = 0.0f;
    options.std = 1.0f;
    options.augmentation.random_resized_crop = true;
    options.augment_seed = seed;
    return options;
  }
  std::vector<TestImage> images_;
};

// Each sample is its image's drawn box resized, from the loader's stream.
TEST_F(ImageRandomResizedCropLoaderTest, SamplesAreTheDrawnBoxesResized) {
  write_tree();
  const std::vector<float> got = epoch(11, 2);
  ASSERT_EQ(got.size(), 3u * 3 * 8 * 8);
  const LoaderOptions options = loader_options(11);
  size_t mismatches = 0;
  int whole = 0;
  for (int i = 0; i < 3; ++i) {
    const CropBox box = draw_resized_crop(options.augmentation, 11, 2, i, 16, 20);
    whole += box.height == 16 && box.width == 20;
    std::vector<uint8_t> expected(3 * 8 * 8);
    resize_bilinear(images_[static_cast<size_t>(i)].pixels.data(), 3, 16, 20, box, 8, 8, expected.data());
    for (size_t p = 0; p < expected.size(); ++p) {
      mismatches += got[static_cast<size_t>(i) * expected.size() + p] != static_cast<float>(expected[p]) / 255.0f;
    }
  }
  EXPECT_EQ(mismatches, 0u);
  EXPECT_LT(whole, 3);
  // The same seed and epoch again: the same batches; another seed or epoch:
  // other crops.
  EXPECT_EQ(epoch(11, 2), got);
  EXPECT_NE(epoch(12, 2), got);
  EXPECT_NE(epoch(11, 3), got);
  // The flip, drawn as before, mirrors the resized crop.
  const std::vector<float> flipped = epoch(11, 2, true);
  for (int i = 0; i < 3; ++i) {
    const AugmentDraw draw = draw_augmentation(options.augmentation, 11, 2, i);
    bool mirrored = true;
    for (int c = 0; c < 3; ++c) {
      for (int y = 0; y < 8; ++y) {
        for (int x = 0; x < 8; ++x) {
          const size_t base = static_cast<size_t>(i) * 192 + static_cast<size_t>(c * 64 + y * 8);
          mirrored = mirrored && flipped[base + static_cast<size_t>(x)] == got[base + static_cast<size_t>(draw.flip ? 7 - x : x)];
        }
      }
    }
    EXPECT_TRUE(mirrored) << "sample " << i;
  }
}

TEST_F(ImageRandomResizedCropLoaderTest, NeedsSourceImagesAndSaneRanges) {
  write_tree();
  LoaderOptions options = loader_options(0);
  options.augmentation.resized_crop_scale = {0.0, 1.0};
  const auto scale = thrown_by([&] { BatchLoader(dataset(), SplitSampler(3), options); });
  EXPECT_EQ(scale.code, ErrorCode::kInvalidArgument);
  EXPECT_TRUE(has(scale.message, "scale range")) << scale.message;
  options = loader_options(0);
  options.augmentation.resized_crop_ratio = {2.0, 1.0};
  EXPECT_TRUE(has(thrown_by([&] { BatchLoader(dataset(), SplitSampler(3), options); }).message, "ratio range"));

  // A dataset of fixed-size samples has no source image to crop from.
  class Fixed final : public Dataset {
   public:
    int64_t size() const override { return 1; }
    core::Shape sample_shape() const override { return {3, 4, 4}; }
    int32_t read_sample(int64_t, uint8_t* pixels) const override {
      std::fill(pixels, pixels + 48, 0);
      return 0;
    }
  };
  const auto fixed = thrown_by([&] { BatchLoader(std::make_shared<const Fixed>(), SplitSampler(1), loader_options(0)); });
  EXPECT_EQ(fixed.code, ErrorCode::kInvalidArgument);
  EXPECT_TRUE(has(fixed.message, "random_resized_crop needs a dataset that resizes source images")) << fixed.message;
  std::vector<uint8_t> pixels(48);
  EXPECT_EQ(thrown_by([&] {
              Fixed().read_region(0, [](int64_t h, int64_t w) { return CropBox{0, 0, h, w}; }, pixels.data());
            }).code,
            ErrorCode::kNotSupported);
}

}  // namespace
}  // namespace dt::data
