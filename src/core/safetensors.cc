#include "core/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors stores little-endian data; a big-endian host would need byte swapping");

namespace dt::core {

namespace {

using Json = nlohmann::ordered_json;

// The format caps the header so that a corrupt length cannot make a reader
// allocate gigabytes.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
constexpr const char* kMetadataKey = "__metadata__";

std::string system_reason() { return std::strerror(errno); }

// A file descriptor that closes itself.
class File {
 public:
  explicit File(int fd) : fd_(fd) {}
  ~File() {
    if (fd_ >= 0) ::close(fd_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

void write_all(int fd, const void* data, size_t bytes, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd, p, bytes);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(ErrorCode::kIo, "writing " + path + ": " + system_reason());
    }
    p += n;
    bytes -= static_cast<size_t>(n);
  }
}

void read_exact(int fd, void* data, size_t bytes, uint64_t offset, const std::string& path) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::pread(fd, p, bytes, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(ErrorCode::kIo, "reading " + path + ": " + system_reason());
    }
    if (n == 0) throw Error(ErrorCode::kIo, path + " is truncated");
    p += n;
    offset += static_cast<uint64_t>(n);
    bytes -= static_cast<size_t>(n);
  }
}

// Removes the temporary file unless the save reached its rename.
class TempFileGuard {
 public:
  explicit TempFileGuard(std::string path) : path_(std::move(path)) {}
  ~TempFileGuard() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  void commit() { path_.clear(); }

 private:
  std::string path_;
};

Json build_header(const NamedArrays& arrays, const std::map<std::string, std::string>& metadata) {
  Json header = Json::object();
  if (!metadata.empty()) header[kMetadataKey] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, array] : arrays) {
    const uint64_t end = offset + array.nbytes();
    header[name] = {{"dtype", dtype_name(array.dtype())},
                    {"shape", array.shape().to_vector()},
                    {"data_offsets", {offset, end}}};
    offset = end;
  }
  return header;
}

void check_names(const NamedArrays& arrays) {
  std::set<std::string> seen;
  for (const auto& [name, array] : arrays) {
    if (name.empty()) throw Error(ErrorCode::kInvalidArgument, "an array name is empty");
    if (name == kMetadataKey) throw Error(ErrorCode::kInvalidArgument, "\"__metadata__\" is reserved by safetensors");
    if (!seen.insert(name).second) throw Error(ErrorCode::kInvalidArgument, "array name \"" + name + "\" repeats");
    if (!array.defined()) throw Error(ErrorCode::kInvalidArgument, "array \"" + name + "\" has no storage");
  }
}

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin;
  uint64_t end;
};

std::vector<Entry> parse_entries(const Json& header, uint64_t data_bytes, const std::string& path,
                                 std::map<std::string, std::string>& metadata) {
  if (!header.is_object()) throw Error(ErrorCode::kIo, path + ": header is not a JSON object");
  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == kMetadataKey) {
      if (!value.is_object()) throw Error(ErrorCode::kIo, path + ": __metadata__ is not an object");
      for (const auto& [key, text] : value.items()) {
        if (!text.is_string()) throw Error(ErrorCode::kIo, path + ": metadata \"" + key + "\" is not a string");
        metadata[key] = text.get<std::string>();
      }
      continue;
    }
    const std::string where = path + ": tensor \"" + name + "\"";
    if (!value.is_object() || !value.contains("dtype") || !value.contains("shape") ||
        !value.contains("data_offsets")) {
      throw Error(ErrorCode::kIo, where + " lacks dtype, shape or data_offsets");
    }
    const Json& dtype = value["dtype"];
    const Json& shape = value["shape"];
    const Json& offsets = value["data_offsets"];
    if (!dtype.is_string()) throw Error(ErrorCode::kIo, where + ": dtype is not a string");
    if (!shape.is_array() || shape.size() > kMaxNDim) throw Error(ErrorCode::kIo, where + ": bad shape");
    std::vector<int64_t> dims;
    for (const auto& d : shape) {
      if (!d.is_number_unsigned()) throw Error(ErrorCode::kIo, where + ": shape holds a non-natural number");
      const uint64_t dim = d.get<uint64_t>();
      if (dim > static_cast<uint64_t>(INT64_MAX)) throw Error(ErrorCode::kIo, where + ": dim too large");
      dims.push_back(static_cast<int64_t>(dim));
    }
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned()) {
      throw Error(ErrorCode::kIo, where + ": data_offsets is not [begin, end]");
    }
    Entry entry{name, DType::kFloat32, Shape(), offsets[0].get<uint64_t>(), offsets[1].get<uint64_t>()};
    try {
      entry.dtype = dtype_from_name(dtype.get<std::string>());
      entry.shape = Shape(dims);
      const uint64_t expected = entry.shape.nbytes(dtype_size(entry.dtype));
      if (entry.begin > entry.end || entry.end - entry.begin != expected) {
        throw Error(ErrorCode::kIo, "data_offsets [" + std::to_string(entry.begin) + ", " +
                                        std::to_string(entry.end) + "] do not hold " + std::to_string(expected) +
                                        " bytes");
      }
    } catch (const Error& e) {
      throw Error(ErrorCode::kIo, where + ": " + e.what());
    }
    if (entry.end > data_bytes) throw Error(ErrorCode::kIo, where + " extends past the end of the file");
    entries.push_back(std::move(entry));
  }
  // The format requires the tensors to tile the data block: no holes, no overlaps.
  std::vector<const Entry*> by_offset;
  for (const auto& e : entries) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const Entry* a, const Entry* b) { return a->begin != b->begin ? a->begin < b->begin : a->end < b->end; });
  uint64_t covered = 0;
  for (const Entry* e : by_offset) {
    if (e->begin != covered) throw Error(ErrorCode::kIo, path + ": tensor data overlaps or leaves a hole at byte " +
                                                             std::to_string(covered));
    covered = e->end;
  }
  if (covered != data_bytes) {
    throw Error(ErrorCode::kIo, path + ": " + std::to_string(data_bytes - covered) +
                                    " bytes after the last tensor belong to no tensor");
  }
  return entries;
}

// The header for arrays, padded with spaces so that the data block starts
// 8-byte aligned, as the reference writer does.
std::string padded_header(const NamedArrays& arrays, const std::map<std::string, std::string>& metadata) {
  check_names(arrays);
  std::string header = build_header(arrays, metadata).dump();
  header.append((8 - header.size() % 8) % 8, ' ');
  return header;
}

// Where the bytes go and where they come from: a file or memory.
using WriteAll = std::function<void(const void* data, size_t bytes)>;
using ReadAt = std::function<void(void* data, size_t bytes, uint64_t offset)>;

void write_contents(const NamedArrays& arrays, const std::string& header, const WriteAll& write) {
  unsigned char length[8];
  const uint64_t header_bytes = header.size();
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(header_bytes >> (8 * i));
  write(length, sizeof length);
  write(header.data(), header.size());
  std::vector<char> staging;
  for (const auto& [name, array] : arrays) {
    if (array.context()->is_cpu()) {
      write(array.data(), array.nbytes());
    } else {
      staging.resize(array.nbytes());
      array.copy_to_host(staging.data(), staging.size());
      write(staging.data(), staging.size());
    }
  }
}

// total_bytes: the size of what read reads from; what: its name in errors.
SafetensorsContents read_contents(uint64_t total_bytes, const ReadAt& read, const std::string& what,
                                  const std::shared_ptr<Context>& ctx) {
  if (total_bytes < 8) throw Error(ErrorCode::kIo, what + " is too short to be a safetensors file");
  unsigned char length[8];
  read(length, sizeof length, 0);
  uint64_t header_bytes = 0;
  for (int i = 0; i < 8; ++i) header_bytes |= static_cast<uint64_t>(length[i]) << (8 * i);
  if (header_bytes > kMaxHeaderBytes || header_bytes > total_bytes - 8) {
    throw Error(ErrorCode::kIo, what + ": header length " + std::to_string(header_bytes) + " exceeds the file");
  }
  std::string text(header_bytes, '\0');
  read(text.data(), text.size(), 8);
  Json header = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded()) throw Error(ErrorCode::kIo, what + ": header is not valid JSON");

  const uint64_t data_start = 8 + header_bytes;
  SafetensorsContents contents;
  const std::vector<Entry> entries = parse_entries(header, total_bytes - data_start, what, contents.metadata);
  std::vector<char> staging;
  for (const Entry& entry : entries) {
    NDArray array = NDArray::empty(ctx, entry.dtype, entry.shape);
    const size_t bytes = array.nbytes();
    if (ctx->is_cpu()) {
      read(array.data(), bytes, data_start + entry.begin);
    } else {
      staging.resize(bytes);
      read(staging.data(), bytes, data_start + entry.begin);
      array.copy_from_host(staging.data(), bytes);
    }
    contents.arrays.emplace_back(entry.name, std::move(array));
  }
  return contents;
}

}  // namespace

void save_safetensors(const std::string& path, const NamedArrays& arrays,
                      const std::map<std::string, std::string>& metadata) {
  const std::string header = padded_header(arrays, metadata);

  // The file is replaced by rename(), which would just as happily replace a
  // device node or a directory's entry: refuse anything but a regular file.
  struct stat existing;
  if (::stat(path.c_str(), &existing) == 0 && !S_ISREG(existing.st_mode)) {
    throw Error(ErrorCode::kIo, path + " exists and is not a regular file");
  }
  std::string temp_path = path + ".XXXXXX";
  File file(::mkstemp(temp_path.data()));
  if (file.get() < 0) throw Error(ErrorCode::kIo, "cannot create a file beside " + path + ": " + system_reason());
  TempFileGuard guard(temp_path);

  write_contents(arrays, header, [&](const void* data, size_t bytes) { write_all(file.get(), data, bytes, path); });
  if (::fsync(file.get()) != 0) throw Error(ErrorCode::kIo, "flushing " + path + ": " + system_reason());
  // mkstemp makes the file 0600; a checkpoint should get the usual permissions.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(file.get(), 0666 & ~mask);
  if (::close(file.release()) != 0) throw Error(ErrorCode::kIo, "closing " + path + ": " + system_reason());
  if (::rename(temp_path.c_str(), path.c_str()) != 0) {
    throw Error(ErrorCode::kIo, "renaming the new file to " + path + ": " + system_reason());
  }
  guard.commit();
}

SafetensorsContents load_safetensors(const std::string& path, const std::shared_ptr<Context>& ctx) {
  File file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (file.get() < 0) {
    const ErrorCode code = errno == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo;
    throw Error(code, "cannot open " + path + ": " + system_reason());
  }
  struct stat info;
  if (::fstat(file.get(), &info) != 0) throw Error(ErrorCode::kIo, "cannot stat " + path + ": " + system_reason());
  if (!S_ISREG(info.st_mode)) throw Error(ErrorCode::kIo, path + " is not a regular file");
  return read_contents(
      static_cast<uint64_t>(info.st_size),
      [&](void* data, size_t bytes, uint64_t offset) { read_exact(file.get(), data, bytes, offset, path); }, path,
      ctx);
}

std::vector<uint8_t> safetensors_bytes(const NamedArrays& arrays, const std::map<std::string, std::string>& metadata) {
  const std::string header = padded_header(arrays, metadata);
  size_t total = 8 + header.size();
  for (const auto& [name, array] : arrays) total += array.nbytes();
  std::vector<uint8_t> bytes;
  bytes.reserve(total);
  write_contents(arrays, header, [&](const void* data, size_t size) {
    const auto* begin = static_cast<const uint8_t*>(data);
    bytes.insert(bytes.end(), begin, begin + size);
  });
  return bytes;
}

SafetensorsContents parse_safetensors(const std::vector<uint8_t>& bytes, const std::shared_ptr<Context>& ctx,
                                      const std::string& what) {
  return read_contents(
      bytes.size(),
      [&](void* data, size_t size, uint64_t offset) {
        // parse_entries keeps every tensor inside; this guards the header reads.
        if (offset > bytes.size() || size > bytes.size() - offset) throw Error(ErrorCode::kIo, what + " is truncated");
        if (size > 0) std::memcpy(data, bytes.data() + offset, size);
      },
      what, ctx);
}

}  // namespace dt::core
