// Turns one child stream into whole lines prefixed with the process's role
// and rank ("[worker 1] ..."), written to dtrun's stdout or stderr, and
// copies the raw bytes to the process's log file when there is one. Lines
// are written whole, so output of several processes never interleaves
// mid-line.
#pragma once

#include <string>

namespace dt::dtrun {

class LinePrefixer {
 public:
  // log_fd: -1 for none; not owned. colour: an ANSI SGR code such as "32",
  // or empty for plain text (dtrun colours only when out_fd is a TTY).
  LinePrefixer(const std::string& label, const std::string& colour, int out_fd, int log_fd);

  void feed(const char* data, size_t size);
  // End of stream: a last line without '\n' is written with one.
  void finish();

  // A line longer than this is written in pieces rather than held.
  static constexpr size_t kMaxLine = 64 * 1024;

 private:
  void emit(const char* data, size_t size);

  std::string prefix_;
  int out_fd_;
  int log_fd_;
  std::string pending_;
};

// Writes all of data, retrying on EINTR and short writes. Errors (a closed
// stdout, a full disk) are dropped: losing output must not stop the job.
void write_all(int fd, const char* data, size_t size);

}  // namespace dt::dtrun
