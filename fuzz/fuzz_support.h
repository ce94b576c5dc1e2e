// What the libFuzzer targets share. A target returns normally when the parser
// accepts an input or rejects it with core::Error (the clear error every
// parser promises); anything else is a finding: a sanitizer report, another
// exception escaping (libFuzzer reports it as a deadly signal), a hang, or a
// broken invariant that require() turns into an abort.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace dt::fuzz {

// Aborts with `what` when an invariant of an accepted input does not hold.
inline void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz invariant broken: %s\n", what);
    std::abort();
  }
}

// A file holding the current input, for the parsers whose entry point takes a
// path: an anonymous memory file (memfd) reached as /proc/self/fd/N, so that
// millions of runs touch no disk and leave nothing behind. It is a regular
// file to fstat, as the readers require. One per process, created on first use
// and never freed (a target has no place to free it).
class InputFile {
 public:
  static const std::string& write(const uint8_t* data, size_t size) {
    static InputFile* file = new InputFile;
    file->replace(data, size);
    return file->path_;
  }

 private:
  InputFile() : fd_(::memfd_create("dt-fuzz-input", MFD_CLOEXEC)) {
    if (fd_ < 0) fail("memfd_create");
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }

  void replace(const uint8_t* data, size_t size) {
    if (::ftruncate(fd_, 0) != 0) fail("ftruncate");
    size_t done = 0;
    while (done < size) {
      const ssize_t n = ::pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail("pwrite");
      done += static_cast<size_t>(n);
    }
  }

  [[noreturn]] static void fail(const char* call) {
    std::fprintf(stderr, "fuzz input file: %s: %s\n", call, std::strerror(errno));
    std::abort();
  }

  int fd_;
  std::string path_;
};

}  // namespace dt::fuzz
