// PNG and JPEG decoding: exact or close pixels in every layout, and
// truncated, corrupt, other and mutated files failing cleanly, named.
#include <gtest/gtest.h>

#include "image_folder_test_util.h"

namespace dt::data {
namespace {

using namespace image_folder_test;

// --- decoding ---------------------------------------------------------------

class ImageDecodeTest : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const Bytes& bytes) {
    write_plain(dir_.file(name), bytes);
    return dir_.file(name);
  }
  TempTree dir_;
};

TEST_F(ImageDecodeTest, PngIsExactInEveryLayout) {
  const DecodedImage rgb = decode_image(write("rgb.png", png_bytes(pattern_image(5, 7, 3))));
  ASSERT_EQ(rgb.height, 5);
  ASSERT_EQ(rgb.width, 7);
  EXPECT_EQ(rgb.pixels, pattern_image(5, 7, 3).pixels);
  // Grey: R = G = B = the grey level.
  const DecodedImage grey = decode_image(write("grey.png", png_bytes(pattern_image(3, 4, 1))));
  ASSERT_EQ(grey.pixels.size(), 3u * 4 * 3);
  size_t mismatches = 0;
  for (int y = 0; y < 3; ++y) {
    for (int x = 0; x < 4; ++x) {
      for (int c = 0; c < 3; ++c) mismatches += grey.pixels[(y * 4 + x) * 3 + c] != pattern_pixel(y, x, 0);
    }
  }
  EXPECT_EQ(mismatches, 0u);
  // RGBA, some of it translucent: the alpha is dropped, the colour kept.
  TestImage rgba = pattern_image(4, 3, 4);
  for (size_t i = 3; i < rgba.pixels.size(); i += 4) rgba.pixels[i] = static_cast<uint8_t>(i * 13 % 256);
  const DecodedImage opaque = decode_image(write("rgba.png", png_bytes(rgba)));
  EXPECT_EQ(opaque.pixels, pattern_image(4, 3, 3).pixels);
}

// Quality 100 without subsampling: within a few levels of the original.
TEST_F(ImageDecodeTest, JpegIsCloseInRgbAndGrey) {
  const TestImage smooth = [] {
    TestImage image{8, 16, 3, {}};
    for (int y = 0; y < 8; ++y) {
      for (int x = 0; x < 16; ++x) {
        image.pixels.push_back(static_cast<uint8_t>(16 * x));
        image.pixels.push_back(static_cast<uint8_t>(30 * y));
        image.pixels.push_back(200);
      }
    }
    return image;
  }();
  const DecodedImage rgb = decode_image(write("rgb.jpg", jpeg_bytes(smooth)));
  ASSERT_EQ(rgb.height, 8);
  ASSERT_EQ(rgb.width, 16);
  ASSERT_EQ(rgb.pixels.size(), smooth.pixels.size());
  int worst = 0;
  for (size_t i = 0; i < smooth.pixels.size(); ++i) worst = std::max(worst, std::abs(rgb.pixels[i] - smooth.pixels[i]));
  EXPECT_LE(worst, 4);
  TestImage grey{8, 8, 1, {}};
  for (int i = 0; i < 64; ++i) grey.pixels.push_back(static_cast<uint8_t>(40 + 2 * i));
  const DecodedImage expanded = decode_image(write("grey.jpeg", jpeg_bytes(grey)));
  ASSERT_EQ(expanded.pixels.size(), 64u * 3);
  worst = 0;
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(expanded.pixels[i * 3], expanded.pixels[i * 3 + 1]);
    EXPECT_EQ(expanded.pixels[i * 3], expanded.pixels[i * 3 + 2]);
    worst = std::max(worst, std::abs(expanded.pixels[i * 3] - grey.pixels[i]));
  }
  EXPECT_LE(worst, 2);
}

TEST_F(ImageDecodeTest, TruncatedJpegNamesTheFileAndTheOffset) {
  const Bytes whole = jpeg_bytes(pattern_image(32, 32, 3));
  const std::string path = write("cut.jpg", Bytes(whole.begin(), whole.begin() + whole.size() / 2));
  const auto e = thrown_by([&] { decode_image(path); });
  EXPECT_EQ(e.code, ErrorCode::kIo);
  EXPECT_TRUE(has(e.message, "truncated JPEG file " + path + ": it ends at byte offset " +
                                std::to_string(whole.size() / 2)))
      << e.message;
  EXPECT_TRUE(has(e.message, "Premature end of JPEG file")) << e.message;
  // Only the header: the tables and the frame are missing.
  const std::string header = write("header.jpg", Bytes(whole.begin(), whole.begin() + 10));
  EXPECT_EQ(thrown_by([&] { decode_image(header); }).code, ErrorCode::kIo);
}

TEST_F(ImageDecodeTest, CorruptJpegIsAnErrorNotACrash) {
  const Bytes whole = jpeg_bytes(pattern_image(32, 32, 3));
  // A frame header (SOF0: FF C0, length, precision, height, width) that
  // claims a height of 0.
  Bytes empty = whole;
  size_t sof = 2;
  while (sof + 1 < empty.size() && !(empty[sof] == 0xFF && empty[sof + 1] == 0xC0)) ++sof;
  ASSERT_LT(sof + 6, empty.size());
  empty[sof + 5] = 0;
  empty[sof + 6] = 0;
  const std::string header = write("empty.jpg", empty);
  const auto e = thrown_by([&] { decode_image(header); });
  EXPECT_EQ(e.code, ErrorCode::kIo);
  EXPECT_TRUE(has(e.message, "corrupt JPEG file " + header)) << e.message;
  EXPECT_TRUE(has(e.message, "near byte offset")) << e.message;
  // An end-of-image marker inside the entropy-coded data: libjpeg would
  // only warn and fill the rest with grey.
  Bytes cut = whole;
  cut[whole.size() * 3 / 4] = 0xFF;
  cut[whole.size() * 3 / 4 + 1] = 0xD9;
  const std::string data = write("marker.jpg", cut);
  const auto m = thrown_by([&] { decode_image(data); });
  EXPECT_EQ(m.code, ErrorCode::kIo);
  EXPECT_TRUE(has(m.message, "corrupt JPEG file " + data)) << m.message;
  EXPECT_TRUE(has(m.message, "Corrupt JPEG data")) << m.message;
}

TEST_F(ImageDecodeTest, TruncatedOrCorruptPngNamesTheFile) {
  const Bytes whole = png_bytes(pattern_image(32, 32, 3));
  const std::string cut = write("cut.png", Bytes(whole.begin(), whole.end() - 20));
  const auto truncated = thrown_by([&] { decode_image(cut); });
  EXPECT_EQ(truncated.code, ErrorCode::kIo);
  EXPECT_TRUE(has(truncated.message, "corrupt or truncated PNG file " + cut)) << truncated.message;
  // A flipped byte in the pixel data fails its chunk's CRC.
  Bytes flipped = whole;
  flipped[whole.size() / 2] ^= 0xFF;
  const std::string bad = write("bad.png", flipped);
  const auto corrupt = thrown_by([&] { decode_image(bad); });
  EXPECT_EQ(corrupt.code, ErrorCode::kIo);
  EXPECT_TRUE(has(corrupt.message, bad)) << corrupt.message;
}

TEST_F(ImageDecodeTest, OtherFilesAreClearErrors) {
  const std::string gif = write("a.png", Bytes{'G', 'I', 'F', '8', '9', 'a', 1, 0, 1, 0});
  const auto other = thrown_by([&] { decode_image(gif); });
  EXPECT_EQ(other.code, ErrorCode::kIo);
  EXPECT_TRUE(has(other.message, gif + " is neither JPEG nor PNG")) << other.message;
  const std::string empty = write("empty.jpg", {});
  EXPECT_TRUE(has(thrown_by([&] { decode_image(empty); }).message, empty + " is empty"));
  EXPECT_EQ(thrown_by([&] { decode_image(dir_.file("missing.png")); }).code, ErrorCode::kNotFound);
}

// A bounded fuzz of both decoders: mutated and cut copies of valid files
// decode or throw core::Error, and never crash, hang or exit.
TEST_F(ImageDecodeTest, MutatedFilesDecodeOrFailCleanly) {
  const TestImage image = pattern_image(24, 20, 3);
  const std::string path = dir_.file("fuzz");
  uint64_t state = 12345;
  const auto next = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<size_t>(state >> 33);
  };
  int failures = 0;
  for (const Bytes& valid : {jpeg_bytes(image), png_bytes(image)}) {
    for (int round = 0; round < 300; ++round) {
      Bytes bytes = valid;
      const size_t edits = 1 + next() % 8;
      for (size_t e = 0; e < edits; ++e) bytes[next() % bytes.size()] = static_cast<uint8_t>(next());
      if (round % 3 == 0) bytes.resize(next() % bytes.size());
      write_plain(path, bytes);
      try {
        const DecodedImage decoded = decode_image(path);
        EXPECT_EQ(decoded.pixels.size(), static_cast<size_t>(decoded.height * decoded.width * 3));
      } catch (const core::Error& e) {
        ++failures;
        EXPECT_TRUE(has(e.what(), path)) << e.what();
      }
    }
  }
  EXPECT_GT(failures, 100);
}

}  // namespace
}  // namespace dt::data
