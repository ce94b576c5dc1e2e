// The framing of dmlc-core's RecordIO, the container of MXNet's .rec files
// (im2rec, ImageRecordIter): every part of a record is
//   uint32 magic 0xced7230a, uint32 lrecord, payload, zero padding to 4 bytes
// little-endian, where lrecord's upper 3 bits are the continuation flag
// (cflag) and its lower 29 bits the part's payload length. cflag 0 is a
// whole record; a record whose payload holds the magic at a 4-byte-aligned
// position is written as a start part (1), middle parts (2) and an end part
// (3), cut at each such magic, which the reader puts back between parts.
//
// Reads with pread on one descriptor, so const members may run on many
// threads at once (the batch loader's workers). Every malformed input is
// Error(kIo) naming the file and the byte offset of the part at fault, and
// every read moves forward by at least one part header, so no input makes a
// walk loop or read outside the file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dt::data {

class RecordIOReader {
 public:
  static constexpr uint32_t kMagic = 0xced7230a;
  static constexpr int64_t kPartHeaderBytes = 8;

  // Opens `path`: Error(kNotFound) when it does not exist, Error(kIo) when it
  // is not a regular file or cannot be opened.
  explicit RecordIOReader(const std::string& path);
  ~RecordIOReader();
  RecordIOReader(const RecordIOReader&) = delete;
  RecordIOReader& operator=(const RecordIOReader&) = delete;

  const std::string& path() const { return path_; }
  int64_t file_size() const { return size_; }

  // Reads the record that starts at byte `offset`, its parts joined, into
  // `payload` (cleared first; nullptr only walks the parts' headers) and
  // returns the offset just past it: the next record's. Error(kIo) for an
  // offset outside the file, a part header cut short, a bad magic, a cflag
  // of 4 to 7, a record that starts with a middle or end part, a split
  // record interrupted by a whole or start part or by the end of the file,
  // or a part whose payload runs past the end of the file.
  int64_t read_record(int64_t offset, std::vector<uint8_t>* payload) const;

  // The start offsets of the file's records, in file order, walking it from
  // byte 0 to its end; read_record's errors for a malformed record.
  std::vector<int64_t> scan() const;

  // "<path>, record at byte offset <offset>": how messages name a record.
  std::string where(int64_t offset) const;

 private:
  // Exactly `size` bytes at `offset`, which the caller has checked lie in
  // the file; Error(kIo) when the file cannot deliver them.
  void read_exact(int64_t offset, void* out, size_t size) const;

  std::string path_;
  int fd_ = -1;
  int64_t size_ = 0;
};

}  // namespace dt::data
