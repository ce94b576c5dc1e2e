#include "data/idx_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstring>
#include <string>
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

class IdxFileTest : public ::testing::Test {
 protected:
  // Writes `bytes` plain and gzip-compressed; returns {plain, gzip} paths.
  std::vector<std::string> write_both(const std::string& name, const Bytes& bytes) {
    const std::string plain = dir_.file(name);
    const std::string gzip = dir_.file(name + ".gz");
    testing::write_plain(plain, bytes);
    testing::write_gzip(gzip, bytes);
    return {plain, gzip};
  }

  // Both encodings of `bytes` fail with kIo, the message naming the file and
  // containing `fragment`.
  void expect_io_error(const Bytes& bytes, const std::string& fragment) {
    for (const std::string& path : write_both("defective", bytes)) {
      const testing::Thrown error = thrown_by([&] { read_idx(path); });
      EXPECT_EQ(error.code, ErrorCode::kIo) << path;
      EXPECT_NE(error.message.find(path), std::string::npos) << error.message;
      EXPECT_NE(error.message.find(fragment), std::string::npos) << error.message;
    }
  }

  testing::TempDir dir_;
};

TEST_F(IdxFileTest, ReadsUint8PlainAndGzip) {
  Bytes data(24);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<unsigned char>(i * 10);
  for (const std::string& path : write_both("images", idx_u8({2, 3, 4}, data))) {
    const core::NDArray array = read_idx(path);
    EXPECT_EQ(array.dtype(), DType::kUInt8);
    EXPECT_EQ(array.shape(), core::Shape({2, 3, 4}));
    EXPECT_TRUE(array.context()->is_cpu());
    ASSERT_EQ(array.size(), data.size());
    EXPECT_EQ(std::memcmp(array.data(), data.data(), data.size()), 0) << path;
  }
}

TEST_F(IdxFileTest, DetectsCompressionByContentNotName) {
  const Bytes file = idx_u8({3}, {7, 8, 9});
  const std::string gzip_without_suffix = dir_.file("labels");
  const std::string plain_with_suffix = dir_.file("labels.plain.gz");
  testing::write_gzip(gzip_without_suffix, file);
  testing::write_plain(plain_with_suffix, file);
  ASSERT_EQ(testing::read_bytes(gzip_without_suffix)[0], 0x1f);  // really compressed
  for (const std::string& path : {gzip_without_suffix, plain_with_suffix}) {
    const core::NDArray array = read_idx(path);
    ASSERT_EQ(array.shape(), core::Shape({3}));
    EXPECT_EQ(array.data_as<uint8_t>()[2], 9) << path;
  }
}

TEST_F(IdxFileTest, DecodesBigEndianTypes) {
  // int8: -1, 127, -128 -> widened to int32.
  Bytes int8 = idx_header(0x09, {3});
  int8.insert(int8.end(), {0xFF, 0x7F, 0x80});
  // int16: -300 (0xFED4), 1000 (0x03E8) -> widened to int32.
  Bytes int16 = idx_header(0x0B, {2});
  int16.insert(int16.end(), {0xFE, 0xD4, 0x03, 0xE8});
  // int32: -5, 2^30.
  Bytes int32 = idx_header(0x0C, {2});
  int32.insert(int32.end(), {0xFF, 0xFF, 0xFF, 0xFB, 0x40, 0x00, 0x00, 0x00});
  // float32: 1.5 (0x3FC00000), -2.25 (0xC0100000).
  Bytes f32 = idx_header(0x0D, {1, 2});
  f32.insert(f32.end(), {0x3F, 0xC0, 0x00, 0x00, 0xC0, 0x10, 0x00, 0x00});
  // float64: pi (0x400921FB54442D18).
  Bytes f64 = idx_header(0x0E, {1});
  f64.insert(f64.end(), {0x40, 0x09, 0x21, 0xFB, 0x54, 0x44, 0x2D, 0x18});

  for (const std::string& path : write_both("int8", int8)) {
    const core::NDArray a = read_idx(path);
    ASSERT_EQ(a.dtype(), DType::kInt32);
    EXPECT_EQ(a.data_as<int32_t>()[0], -1);
    EXPECT_EQ(a.data_as<int32_t>()[1], 127);
    EXPECT_EQ(a.data_as<int32_t>()[2], -128);
  }
  for (const std::string& path : write_both("int16", int16)) {
    const core::NDArray a = read_idx(path);
    ASSERT_EQ(a.dtype(), DType::kInt32);
    EXPECT_EQ(a.data_as<int32_t>()[0], -300);
    EXPECT_EQ(a.data_as<int32_t>()[1], 1000);
  }
  for (const std::string& path : write_both("int32", int32)) {
    const core::NDArray a = read_idx(path);
    ASSERT_EQ(a.dtype(), DType::kInt32);
    EXPECT_EQ(a.data_as<int32_t>()[0], -5);
    EXPECT_EQ(a.data_as<int32_t>()[1], 1 << 30);
  }
  for (const std::string& path : write_both("f32", f32)) {
    const core::NDArray a = read_idx(path);
    ASSERT_EQ(a.dtype(), DType::kFloat32);
    EXPECT_EQ(a.shape(), core::Shape({1, 2}));
    EXPECT_EQ(a.data_as<float>()[0], 1.5f);
    EXPECT_EQ(a.data_as<float>()[1], -2.25f);
  }
  for (const std::string& path : write_both("f64", f64)) {
    const core::NDArray a = read_idx(path);
    ASSERT_EQ(a.dtype(), DType::kFloat64);
    EXPECT_EQ(a.data_as<double>()[0], 3.141592653589793);
  }
}

TEST_F(IdxFileTest, ZeroSizedDimReadsEmpty) {
  for (const std::string& path : write_both("empty", idx_u8({0, 28, 28}, {}))) {
    const core::NDArray array = read_idx(path);
    EXPECT_EQ(array.shape(), core::Shape({0, 28, 28}));
    EXPECT_EQ(array.size(), 0u);
  }
}

TEST_F(IdxFileTest, MissingFileIsNotFound) {
  const std::string path = dir_.file("no-such-file-idx3-ubyte.gz");
  const testing::Thrown error = thrown_by([&] { read_idx(path); });
  EXPECT_EQ(error.code, ErrorCode::kNotFound);
  EXPECT_NE(error.message.find(path), std::string::npos) << error.message;
}

TEST_F(IdxFileTest, DirectoryIsAnIoError) {
  const testing::Thrown error = thrown_by([&] { read_idx(dir_.path()); });
  EXPECT_EQ(error.code, ErrorCode::kIo);
  EXPECT_NE(error.message.find(dir_.path()), std::string::npos) << error.message;
}

TEST_F(IdxFileTest, RejectsBadMagic) {
  Bytes file = idx_u8({2}, {1, 2});
  file[1] = 0x01;
  expect_io_error(file, "bad magic");
  // A text file that happens to be called like an IDX file.
  const std::string text = "P2 28 28 255\n";
  expect_io_error(Bytes(text.begin(), text.end()), "bad magic");
}

TEST_F(IdxFileTest, RejectsUnsupportedType) {
  Bytes file = idx_header(0x0A, {2});
  file.insert(file.end(), {1, 2});
  expect_io_error(file, "unsupported type byte 0x0A");
}

TEST_F(IdxFileTest, RejectsZeroOrTooManyDims) {
  expect_io_error(Bytes{0, 0, 0x08, 0}, "declares 0 dims");
  const std::vector<uint32_t> nine(9, 1);
  Bytes file = idx_header(0x08, nine);
  file.push_back(5);
  expect_io_error(file, "declares 9 dims");
}

TEST_F(IdxFileTest, RejectsTruncatedHeaderAndDims) {
  expect_io_error(Bytes{0, 0, 0x08}, "truncated");
  expect_io_error(Bytes{}, "truncated");
  Bytes file = idx_header(0x08, {5, 5});
  file.resize(file.size() - 2);  // cut inside the second dim
  expect_io_error(file, "truncated inside its 2 dims");
}

TEST_F(IdxFileTest, RejectsTruncatedData) {
  expect_io_error(idx_u8({2, 3}, {1, 2, 3, 4, 5}), "need 6 data bytes, the file holds 5");
  Bytes int32 = idx_header(0x0C, {2});
  int32.insert(int32.end(), {0, 0, 0, 1, 0, 0, 0});  // 7 of 8 bytes
  expect_io_error(int32, "need 8 data bytes, the file holds 7");
}

TEST_F(IdxFileTest, HugeClaimOverTinyFileIsTruncatedNotAnAllocation) {
  // 4 GiB promised, 3 bytes present: the reader must report truncation, not
  // try to allocate what the header claims.
  expect_io_error(idx_u8({65536, 65535}, {1, 2, 3}), "truncated");
}

TEST_F(IdxFileTest, RejectsTrailingBytes) {
  expect_io_error(idx_u8({2, 2}, {1, 2, 3, 4, 5}), "trailing bytes");
}

TEST_F(IdxFileTest, RejectsOverflowingDims) {
  expect_io_error(idx_header(0x08, {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}), "overflows");
  // 2^62 elements count fine, but not as 2^65 float64 bytes.
  expect_io_error(idx_header(0x0E, {0x80000000, 0x80000000}), "overflows");
  // 2^61 int8 bytes in the file fit; their 2^63-byte int32 widening does not.
  expect_io_error(idx_header(0x09, {0x80000000, 0x40000000}), "overflows");
}

TEST_F(IdxFileTest, RejectsCutGzipStream) {
  Bytes data(4000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<unsigned char>((i * 7919) >> 3);
  const std::string whole = dir_.file("whole.gz");
  testing::write_gzip(whole, idx_u8({4000}, data));
  ASSERT_EQ(read_idx(whole).size(), 4000u);

  const Bytes compressed = testing::read_bytes(whole);
  const std::string cut = dir_.file("cut.gz");
  // Half the stream, then the stream minus its 8-byte CRC/size trailer.
  for (size_t keep : {compressed.size() / 2, compressed.size() - 8}) {
    testing::write_plain(cut, Bytes(compressed.begin(), compressed.begin() + static_cast<long>(keep)));
    const testing::Thrown error = thrown_by([&] { read_idx(cut); });
    EXPECT_EQ(error.code, ErrorCode::kIo) << "kept " << keep;
    EXPECT_NE(error.message.find(cut), std::string::npos) << error.message;
  }
}

TEST_F(IdxFileTest, RejectsCorruptGzipStream) {
  Bytes data(4000, 3);
  const std::string path = dir_.file("corrupt.gz");
  testing::write_gzip(path, idx_u8({4000}, data));
  Bytes compressed = testing::read_bytes(path);
  for (size_t i = 12; i < compressed.size() - 8; ++i) compressed[i] ^= 0x5A;
  testing::write_plain(path, compressed);
  const testing::Thrown error = thrown_by([&] { read_idx(path); });
  EXPECT_EQ(error.code, ErrorCode::kIo);
  EXPECT_NE(error.message.find(path), std::string::npos) << error.message;
}

}  // namespace
}  // namespace dt::data
