#include "core/file_bytes.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace dt::core {

namespace {

// Reads go in pieces of this size past the size fstat saw, so that the read
// that finds the end does not move the whole buffer.
constexpr size_t kChunkBytes = size_t{64} << 10;

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::vector<uint8_t> read_file_bytes(const std::string& path, const std::string& what) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) throw Error(ErrorCode::kNotFound, what + " " + path + " does not exist");
    throw Error(ErrorCode::kIo, "cannot open " + what + " " + path + ": " + std::strerror(err));
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) {
    throw Error(ErrorCode::kIo, "cannot stat " + what + " " + path + ": " + std::strerror(errno));
  }
  if (!S_ISREG(info.st_mode)) throw Error(ErrorCode::kIo, what + " " + path + " is not a regular file");
  std::vector<uint8_t> bytes;
  bytes.reserve(static_cast<size_t>(info.st_size) + kChunkBytes);
  for (;;) {
    const size_t have = bytes.size();
    bytes.resize(have + kChunkBytes);
    const ssize_t got = ::read(fd.get(), bytes.data() + have, kChunkBytes);
    if (got < 0 && errno == EINTR) {
      bytes.resize(have);
      continue;
    }
    if (got < 0) {
      const int err = errno;
      throw Error(ErrorCode::kIo, "reading " + what + " " + path + " at byte offset " + std::to_string(have) + ": " +
                                      std::strerror(err));
    }
    bytes.resize(have + static_cast<size_t>(got));
    if (got == 0) return bytes;
  }
}

}  // namespace dt::core
