// The RecordIO framing: whole and split records read back as written, the
// index file, and every malformed input a kIo error naming the file and the
// byte offset, never a crash or a loop.
#include "data/recordio_reader.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "data/recordio_index.h"
#include "recordio_test_util.h"

namespace dt::data {
namespace {

using core::ErrorCode;
using testing::Bytes;
using testing::concat;
using testing::recordio_part;
using testing::recordio_record;
using testing::thrown_by;

class RecordIOReaderTest : public ::testing::Test {
 protected:
  std::string write(const Bytes& bytes, const std::string& name = "data.rec") {
    const std::string path = dir_.file(name);
    testing::write_plain(path, bytes);
    return path;
  }
  // The error reading every record of `bytes` raises.
  testing::Thrown scan_error(const Bytes& bytes) {
    const std::string path = write(bytes);
    return thrown_by([&] { RecordIOReader(path).scan(); });
  }
  void expect_io(const testing::Thrown& thrown, const std::string& offset, const std::string& what) {
    EXPECT_EQ(thrown.code, ErrorCode::kIo) << thrown.message;
    EXPECT_NE(thrown.message.find(dir_.file("data.rec")), std::string::npos) << thrown.message;
    EXPECT_NE(thrown.message.find("byte offset " + offset), std::string::npos) << thrown.message;
    EXPECT_NE(thrown.message.find(what), std::string::npos) << thrown.message;
  }

  testing::TempDir dir_;
};

Bytes magic_bytes() {
  Bytes magic;
  testing::put_u32(magic, testing::kRecordIOMagic);
  return magic;
}

TEST_F(RecordIOReaderTest, WholeRecordsOfEveryPaddingReadBack) {
  const std::vector<Bytes> payloads = {{}, {1}, {1, 2, 3, 4, 5}, {9, 8, 7, 6, 5, 4, 3, 2}, {0xce, 0xd7, 0x23}};
  std::vector<Bytes> framed;
  for (const Bytes& p : payloads) framed.push_back(recordio_record(p));
  const RecordIOReader reader(write(concat(framed)));
  const std::vector<int64_t> offsets = reader.scan();
  ASSERT_EQ(offsets, (std::vector<int64_t>{0, 8, 20, 36, 52}));
  std::vector<uint8_t> payload;
  for (size_t i = 0; i < payloads.size(); ++i) {
    const int64_t next = reader.read_record(offsets[i], &payload);
    EXPECT_EQ(payload, payloads[i]) << "record " << i;
    EXPECT_EQ(next, i + 1 < offsets.size() ? offsets[i + 1] : reader.file_size());
  }
}

TEST_F(RecordIOReaderTest, SplitRecordsGetTheirMagicBack) {
  const Bytes m = magic_bytes();
  // The magic at the start, in the middle twice in a row, at the end, and
  // once unaligned (which the writer leaves whole).
  const std::vector<Bytes> payloads = {
      concat({m, {1, 2, 3}}),
      concat({{1, 2, 3, 4}, m, m, {5, 6}}),
      concat({{1, 2, 3, 4, 5, 6, 7, 8}, m}),
      concat({{1, 2}, m, {3, 4}}),
      m,
  };
  const std::vector<int> expected_parts = {2, 3, 2, 1, 2};
  std::vector<Bytes> framed;
  for (size_t i = 0; i < payloads.size(); ++i) {
    int parts = 0;
    framed.push_back(recordio_record(payloads[i], &parts));
    EXPECT_EQ(parts, expected_parts[i]) << "record " << i;
  }
  const RecordIOReader reader(write(concat(framed)));
  const std::vector<int64_t> offsets = reader.scan();
  ASSERT_EQ(offsets.size(), payloads.size());
  std::vector<uint8_t> payload;
  for (size_t i = 0; i < payloads.size(); ++i) {
    reader.read_record(offsets[i], &payload);
    EXPECT_EQ(payload, payloads[i]) << "record " << i;
  }
}

TEST_F(RecordIOReaderTest, BadMagicNamesTheOffset) {
  Bytes bytes = concat({recordio_record({1, 2, 3, 4}), recordio_record({5})});
  bytes[12] ^= 0x01;  // the second record's magic
  expect_io(scan_error(bytes), "12", "bad magic");
}

TEST_F(RecordIOReaderTest, TruncatedHeaderAndPayloadAreErrors) {
  const Bytes whole = recordio_record({1, 2, 3, 4, 5, 6});
  expect_io(scan_error(Bytes(whole.begin(), whole.begin() + 5)), "0", "truncated");
  expect_io(scan_error(Bytes(whole.begin(), whole.end() - 1)), "0", "truncated");
  // A length that claims more than the file holds.
  Bytes big = whole;
  big[4] = 0xff;
  big[5] = 0xff;
  expect_io(scan_error(big), "0", "claims");
  // A second record cut after its magic.
  expect_io(scan_error(concat({whole, Bytes(magic_bytes())})), "16", "truncated");
}

TEST_F(RecordIOReaderTest, BadContinuationSequencesAreErrors) {
  const Bytes a{1, 2, 3, 4};
  for (uint32_t cflag = 4; cflag < 8; ++cflag) {
    expect_io(scan_error(recordio_part(cflag, a)), "0", "continuation flag " + std::to_string(cflag));
  }
  expect_io(scan_error(recordio_part(2, a)), "0", "middle part");
  expect_io(scan_error(recordio_part(3, a)), "0", "end part");
  // A start part followed by a whole record or another start part.
  expect_io(scan_error(concat({recordio_part(1, a), recordio_part(0, a)})), "12", "whole record");
  expect_io(scan_error(concat({recordio_part(1, a), recordio_part(2, a), recordio_part(1, a)})), "24",
            "start part");
  // A split record that the file ends inside.
  expect_io(scan_error(concat({recordio_part(1, a), recordio_part(2, a)})), "0", "before its end part");
}

TEST_F(RecordIOReaderTest, OffsetsOutsideTheFileAreErrors) {
  const RecordIOReader reader(write(recordio_record({1})));
  std::vector<uint8_t> payload;
  for (int64_t offset : {int64_t{-1}, reader.file_size(), int64_t{1} << 40}) {
    const testing::Thrown thrown = thrown_by([&] { reader.read_record(offset, &payload); });
    EXPECT_EQ(thrown.code, ErrorCode::kIo);
    EXPECT_NE(thrown.message.find("byte offset " + std::to_string(offset)), std::string::npos) << thrown.message;
  }
}

TEST_F(RecordIOReaderTest, MissingFileIsNotFoundAndEmptyFileHasNoRecords) {
  EXPECT_EQ(thrown_by([&] { RecordIOReader reader(dir_.file("absent.rec")); }).code, ErrorCode::kNotFound);
  EXPECT_TRUE(RecordIOReader(write({})).scan().empty());
}

TEST_F(RecordIOReaderTest, GarbageNeverLoopsOrCrashes) {
  // Headers of zero-length parts and random words: every walk ends quickly.
  Bytes bytes;
  for (int i = 0; i < 2000; ++i) {
    testing::put_u32(bytes, i % 3 == 0 ? testing::kRecordIOMagic : static_cast<uint32_t>(i * 2654435761u));
  }
  const std::string path = write(bytes);
  EXPECT_TRUE(testing::finishes_within(std::chrono::seconds(10), [path] {
    try {
      RecordIOReader(path).scan();
    } catch (const core::Error& e) {
      if (e.code() != ErrorCode::kIo) throw;
    }
  }));
}

TEST_F(RecordIOReaderTest, IndexListsOffsetsInLineOrder) {
  const std::string idx = write(Bytes{'0', '\t', '0', '\n', '\n', '7', ' ', '1', '2', '\r', '\n', '3', '\t', '8'},
                                "data.idx");
  EXPECT_EQ(read_recordio_index(idx, 100), (std::vector<int64_t>{0, 12, 8}));
}

TEST_F(RecordIOReaderTest, MalformedIndexLinesNameTheLine) {
  const auto error = [&](const std::string& text) {
    const std::string idx = write(Bytes(text.begin(), text.end()), "data.idx");
    const testing::Thrown thrown = thrown_by([&] { read_recordio_index(idx, 100); });
    EXPECT_EQ(thrown.code, ErrorCode::kIo) << thrown.message;
    EXPECT_NE(thrown.message.find(idx), std::string::npos) << thrown.message;
    return thrown.message;
  };
  EXPECT_NE(error("0\t0\n1\n").find("line 2 (byte offset 4)"), std::string::npos);
  EXPECT_NE(error("0\tx\n").find("line 1"), std::string::npos);
  EXPECT_NE(error("0\t12x\n").find("line 1"), std::string::npos);
  EXPECT_NE(error("0\t100\n").find("beyond"), std::string::npos);
  EXPECT_NE(error("0\t99999999999999999999999999\n").find("beyond"), std::string::npos);
  EXPECT_NE(error("\n\n").find("no record"), std::string::npos);
  EXPECT_EQ(thrown_by([&] { read_recordio_index(dir_.file("absent.idx"), 100); }).code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace dt::data
