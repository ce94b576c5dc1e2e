#include "data/recordio_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.h"

namespace dt::data {

namespace {

using core::Error;
using core::ErrorCode;

constexpr uint32_t kLengthMask = (uint32_t{1} << 29) - 1;

enum class Part : uint32_t { kWhole = 0, kStart = 1, kMiddle = 2, kEnd = 3 };

const char* part_name(uint32_t cflag) {
  switch (cflag) {
    case 0:
      return "a whole record (cflag 0)";
    case 1:
      return "a start part (cflag 1)";
    case 2:
      return "a middle part (cflag 2)";
    default:
      return "an end part (cflag 3)";
  }
}

uint32_t little_endian(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

std::string hex(uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", value);
  return text;
}

}  // namespace

RecordIOReader::RecordIOReader(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) throw Error(ErrorCode::kNotFound, "RecordIO file " + path + " does not exist");
    throw Error(ErrorCode::kIo, "cannot open RecordIO file " + path + ": " + std::strerror(err));
  }
  struct stat info {};
  if (::fstat(fd_, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd_);
    throw Error(ErrorCode::kIo, "RecordIO file " + path + " is not a regular file");
  }
  size_ = info.st_size;
}

RecordIOReader::~RecordIOReader() { ::close(fd_); }

std::string RecordIOReader::where(int64_t offset) const {
  return path_ + ", record at byte offset " + std::to_string(offset);
}

void RecordIOReader::read_exact(int64_t offset, void* out, size_t size) const {
  auto* bytes = static_cast<uint8_t*>(out);
  size_t done = 0;
  while (done < size) {
    const ssize_t got = ::pread(fd_, bytes + done, size - done, static_cast<off_t>(offset) + static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      throw Error(ErrorCode::kIo, "cannot read RecordIO file " + path_ + " at byte offset " +
                                      std::to_string(offset + static_cast<int64_t>(done)) + ": " +
                                      (got < 0 ? std::strerror(errno) : "it ended (was it truncated while open?)"));
    }
    done += static_cast<size_t>(got);
  }
}

int64_t RecordIOReader::read_record(int64_t offset, std::vector<uint8_t>* payload) const {
  if (payload != nullptr) payload->clear();
  if (offset < 0 || offset >= size_) {
    throw Error(ErrorCode::kIo, "RecordIO file " + path_ + " (" + std::to_string(size_) +
                                    " bytes) has no record at byte offset " + std::to_string(offset));
  }
  int64_t at = offset;
  for (bool first = true;; first = false) {
    const std::string part = "RecordIO file " + path_ + ": the part at byte offset " + std::to_string(at);
    if (at + kPartHeaderBytes > size_) {
      if (!first) {
        throw Error(ErrorCode::kIo, "RecordIO file " + path_ + ": the split record at byte offset " +
                                        std::to_string(offset) + " ends with the file at byte offset " +
                                        std::to_string(size_) + ", before its end part");
      }
      throw Error(ErrorCode::kIo, part + " is truncated: " + std::to_string(size_ - at) +
                                      " bytes left, a part header needs 8");
    }
    uint8_t head[kPartHeaderBytes];
    read_exact(at, head, sizeof head);
    const uint32_t magic = little_endian(head);
    if (magic != kMagic) {
      throw Error(ErrorCode::kIo, part + " has bad magic " + hex(magic) + " (RecordIO's is " + hex(kMagic) + ")");
    }
    const uint32_t lrecord = little_endian(head + 4);
    const uint32_t cflag = lrecord >> 29;
    const int64_t length = lrecord & kLengthMask;
    if (cflag > static_cast<uint32_t>(Part::kEnd)) {
      throw Error(ErrorCode::kIo, part + " has continuation flag " + std::to_string(cflag) + ", outside 0 to 3");
    }
    const auto kind = static_cast<Part>(cflag);
    if (first && (kind == Part::kMiddle || kind == Part::kEnd)) {
      throw Error(ErrorCode::kIo, part + " begins a record with " + part_name(cflag) +
                                      ", not a whole record or a start part");
    }
    if (!first && (kind == Part::kWhole || kind == Part::kStart)) {
      throw Error(ErrorCode::kIo, part + " is " + part_name(cflag) + " inside the split record at byte offset " +
                                      std::to_string(offset) + ", which needs a middle or end part");
    }
    const int64_t body = at + kPartHeaderBytes;
    const int64_t padded = (length + 3) / 4 * 4;
    if (padded > size_ - body) {
      throw Error(ErrorCode::kIo, part + " is truncated: it claims " + std::to_string(length) +
                                      " payload bytes (" + std::to_string(padded) + " padded to 4), the file holds " +
                                      std::to_string(size_ - body) + " after its header");
    }
    if (payload != nullptr) {
      if (!first) {
        // The writer cut the payload at a magic and dropped it: put it back.
        const uint8_t magic_bytes[4] = {0x0a, 0x23, 0xd7, 0xce};
        payload->insert(payload->end(), magic_bytes, magic_bytes + 4);
      }
      const size_t old = payload->size();
      payload->resize(old + static_cast<size_t>(length));
      if (length > 0) read_exact(body, payload->data() + old, static_cast<size_t>(length));
    }
    at = body + padded;
    if (kind == Part::kWhole || kind == Part::kEnd) return at;
  }
}

std::vector<int64_t> RecordIOReader::scan() const {
  std::vector<int64_t> offsets;
  for (int64_t at = 0; at < size_;) {
    offsets.push_back(at);
    at = read_record(at, nullptr);
  }
  return offsets;
}

}  // namespace dt::data
