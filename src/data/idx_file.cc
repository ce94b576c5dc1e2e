#include "data/idx_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "core/error.h"

namespace dt::data {

namespace {

using core::DType;
using core::Error;
using core::ErrorCode;

// Data is pulled through zlib (or read()) this many bytes at a time, so that
// memory grows with the bytes the file really holds, not with what a header
// claims.
constexpr size_t kChunkBytes = size_t{1} << 20;
// A header may make the reader reserve at most this much before the data
// arrives: enough for every real MNIST-family file in one allocation, small
// enough that a lying header cannot exhaust memory.
constexpr size_t kMaxReserveBytes = size_t{256} << 20;
// zlib's default 8 KiB input buffer makes decompression syscall-bound.
constexpr unsigned kGzipBufferBytes = 128u << 10;

std::string hex_byte(unsigned value) {
  char text[8];
  std::snprintf(text, sizeof text, "0x%02X", value & 0xFFu);
  return text;
}

std::string dims_to_string(const std::vector<int64_t>& dims) {
  std::string text = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(dims[i]);
  }
  return text + ")";
}

struct GzipCloser {
  void operator()(gzFile_s* file) const { gzclose(file); }
};

// Sequential bytes of a file, decompressed when it starts with the gzip
// magic. Owns the descriptor (or the zlib stream that took it over).
class ByteSource {
 public:
  explicit ByteSource(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      const int err = errno;
      if (err == ENOENT || err == ENOTDIR) throw Error(ErrorCode::kNotFound, "IDX file " + path + " does not exist");
      throw Error(ErrorCode::kIo, "cannot open IDX file " + path + ": " + std::strerror(err));
    }
    struct stat info {};
    if (::fstat(fd_, &info) != 0) fail("cannot stat IDX file " + path + ": " + std::strerror(errno));
    if (!S_ISREG(info.st_mode)) fail("IDX file " + path + " is not a regular file");

    unsigned char magic[2] = {0, 0};
    ssize_t got;
    do {
      got = ::pread(fd_, magic, sizeof magic, 0);
    } while (got < 0 && errno == EINTR);
    if (got < 0) fail("reading IDX file " + path + ": " + std::strerror(errno));
    if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
      gzFile gz = gzdopen(fd_, "rb");
      if (gz == nullptr) fail("cannot start decompressing " + path);
      fd_ = -1;  // the zlib stream closes it now
      gz_.reset(gz);
      if (gzbuffer(gz, kGzipBufferBytes) != 0) throw Error(ErrorCode::kInternal, "gzbuffer refused its buffer size");
    }
  }
  ~ByteSource() {
    if (fd_ >= 0) ::close(fd_);
  }
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;

  // Reads up to `bytes` bytes; fewer only at the end of the data.
  size_t read(void* dst, size_t bytes) {
    char* out = static_cast<char*>(dst);
    size_t total = 0;
    while (total < bytes) {
      const size_t want = std::min(bytes - total, kChunkBytes);
      const size_t got = gz_ ? read_gzip(out + total, want) : read_plain(out + total, want);
      if (got == 0) break;
      total += got;
    }
    return total;
  }

 private:
  [[noreturn]] void fail(const std::string& message) {
    ::close(fd_);
    fd_ = -1;
    throw Error(ErrorCode::kIo, message);
  }

  size_t read_plain(char* dst, size_t bytes) {
    for (;;) {
      const ssize_t got = ::read(fd_, dst, bytes);
      if (got >= 0) return static_cast<size_t>(got);
      if (errno != EINTR) throw Error(ErrorCode::kIo, "reading IDX file " + path_ + ": " + std::strerror(errno));
    }
  }

  size_t read_gzip(char* dst, size_t bytes) {
    const int got = gzread(gz_.get(), dst, static_cast<unsigned>(std::min<size_t>(bytes, INT_MAX)));
    int status = Z_OK;
    const char* message = gzerror(gz_.get(), &status);
    // gzread reports a stream cut short as a normal end of data and leaves
    // Z_BUF_ERROR behind, so the status is checked on every call.
    if (got < 0 || (status != Z_OK && status != Z_BUF_ERROR)) {
      throw Error(ErrorCode::kIo, "decompressing IDX file " + path_ + ": " + message);
    }
    if (got == 0 && status == Z_BUF_ERROR) {
      throw Error(ErrorCode::kIo, "IDX file " + path_ + " is truncated: its gzip stream ends early");
    }
    return static_cast<size_t>(got);
  }

  std::string path_;
  int fd_ = -1;
  std::unique_ptr<gzFile_s, GzipCloser> gz_;
};

struct IdxType {
  unsigned char code;
  size_t file_bytes;  // per element in the file
  DType dtype;        // in memory
};

constexpr IdxType kIdxTypes[] = {
    {0x08, 1, DType::kUInt8},   {0x09, 1, DType::kInt32},   {0x0B, 2, DType::kInt32},
    {0x0C, 4, DType::kInt32},   {0x0D, 4, DType::kFloat32}, {0x0E, 8, DType::kFloat64},
};

// Unsigned integer of N bytes, to reassemble big-endian values portably.
template <size_t N>
struct Bits;
template <>
struct Bits<1> {
  using type = uint8_t;
};
template <>
struct Bits<2> {
  using type = uint16_t;
};
template <>
struct Bits<4> {
  using type = uint32_t;
};
template <>
struct Bits<8> {
  using type = uint64_t;
};

// Converts big-endian FileT elements to host-order OutT, independent of the
// host's byte order.
template <typename FileT, typename OutT>
void decode(const unsigned char* src, size_t count, OutT* dst) {
  using B = typename Bits<sizeof(FileT)>::type;
  for (size_t i = 0; i < count; ++i) {
    uint64_t bits = 0;
    for (size_t b = 0; b < sizeof(FileT); ++b) bits = (bits << 8) | src[i * sizeof(FileT) + b];
    const B narrow = static_cast<B>(bits);
    FileT value;
    std::memcpy(&value, &narrow, sizeof value);
    dst[i] = static_cast<OutT>(value);
  }
}

void convert(unsigned char type, const std::vector<unsigned char>& payload, const core::NDArray& out) {
  const size_t n = out.size();
  switch (type) {
    case 0x08:
      if (n > 0) std::memcpy(out.data(), payload.data(), n);
      return;
    case 0x09:
      return decode<int8_t>(payload.data(), n, out.data_as<int32_t>());
    case 0x0B:
      return decode<int16_t>(payload.data(), n, out.data_as<int32_t>());
    case 0x0C:
      return decode<int32_t>(payload.data(), n, out.data_as<int32_t>());
    case 0x0D:
      return decode<float>(payload.data(), n, out.data_as<float>());
    case 0x0E:
      return decode<double>(payload.data(), n, out.data_as<double>());
    default:
      throw Error(ErrorCode::kInternal, "IDX type " + hex_byte(type) + " has no decoder");
  }
}

}  // namespace

core::NDArray read_idx(const std::string& path) {
  ByteSource source(path);

  unsigned char head[4];
  const size_t head_bytes = source.read(head, sizeof head);
  if (head_bytes < sizeof head) {
    throw Error(ErrorCode::kIo, "IDX file " + path + " is truncated: " + std::to_string(head_bytes) +
                                    " bytes, shorter than the 4-byte header");
  }
  if (head[0] != 0 || head[1] != 0) {
    throw Error(ErrorCode::kIo, "IDX file " + path + " has a bad magic: it starts with " + hex_byte(head[0]) + " " +
                                    hex_byte(head[1]) + ", not 0x00 0x00");
  }
  const IdxType* type = nullptr;
  for (const IdxType& candidate : kIdxTypes) {
    if (candidate.code == head[2]) type = &candidate;
  }
  if (type == nullptr) {
    throw Error(ErrorCode::kIo, "IDX file " + path + " has the unsupported type byte " + hex_byte(head[2]) +
                                    " (known: 0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, "
                                    "0x0D float32, 0x0E float64)");
  }
  const size_t ndim = head[3];
  if (ndim == 0 || ndim > core::kMaxNDim) {
    throw Error(ErrorCode::kIo, "IDX file " + path + " declares " + std::to_string(ndim) + " dims; 1 to " +
                                    std::to_string(core::kMaxNDim) + " are supported");
  }

  unsigned char dim_bytes[4 * core::kMaxNDim];
  const size_t got_dim_bytes = source.read(dim_bytes, 4 * ndim);
  if (got_dim_bytes < 4 * ndim) {
    throw Error(ErrorCode::kIo, "IDX file " + path + " is truncated inside its " + std::to_string(ndim) +
                                    " dims (" + std::to_string(got_dim_bytes) + " of " +
                                    std::to_string(4 * ndim) + " bytes)");
  }
  std::vector<int64_t> dims(ndim);
  for (size_t d = 0; d < ndim; ++d) {
    const unsigned char* p = dim_bytes + 4 * d;
    dims[d] = (int64_t{p[0]} << 24) | (int64_t{p[1]} << 16) | (int64_t{p[2]} << 8) | int64_t{p[3]};
  }

  core::Shape shape;
  size_t payload_bytes = 0;
  try {
    shape = core::Shape(dims);
    payload_bytes = shape.nbytes(type->file_bytes);
    shape.nbytes(core::dtype_size(type->dtype));  // the widened copy must fit too
  } catch (const Error&) {
    throw Error(ErrorCode::kIo,
                "IDX file " + path + " has dims " + dims_to_string(dims) + " whose size overflows");
  }

  std::vector<unsigned char> payload;
  payload.reserve(std::min(payload_bytes, kMaxReserveBytes));
  while (payload.size() < payload_bytes) {
    const size_t have = payload.size();
    const size_t want = std::min(payload_bytes - have, kChunkBytes);
    payload.resize(have + want);
    const size_t got = source.read(payload.data() + have, want);
    payload.resize(have + got);
    if (got < want) {
      throw Error(ErrorCode::kIo, "IDX file " + path + " is truncated: dims " + shape.to_string() + " need " +
                                      std::to_string(payload_bytes) + " data bytes, the file holds " +
                                      std::to_string(payload.size()));
    }
  }
  unsigned char extra;
  if (source.read(&extra, 1) != 0) {
    throw Error(ErrorCode::kIo, "IDX file " + path + " has trailing bytes after the " +
                                    std::to_string(payload_bytes) + " data bytes that dims " + shape.to_string() +
                                    " describe");
  }

  core::NDArray out = core::NDArray::empty(core::make_cpu_context(), type->dtype, shape);
  convert(type->code, payload, out);
  return out;
}

}  // namespace dt::data
