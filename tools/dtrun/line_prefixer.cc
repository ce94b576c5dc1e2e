#include "line_prefixer.h"

#include <unistd.h>

#include <cerrno>

namespace dt::dtrun {

void write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
}

LinePrefixer::LinePrefixer(const std::string& label, const std::string& colour, int out_fd, int log_fd)
    : prefix_(colour.empty() ? "[" + label + "] " : "\033[" + colour + "m[" + label + "]\033[0m "),
      out_fd_(out_fd),
      log_fd_(log_fd) {}

void LinePrefixer::emit(const char* data, size_t size) {
  std::string line;
  line.reserve(prefix_.size() + size + 1);
  line.append(prefix_).append(data, size).push_back('\n');
  write_all(out_fd_, line.data(), line.size());
}

void LinePrefixer::feed(const char* data, size_t size) {
  if (log_fd_ >= 0) write_all(log_fd_, data, size);
  size_t start = 0;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] != '\n') continue;
    if (pending_.empty()) {
      emit(data + start, i - start);
    } else {
      pending_.append(data + start, i - start);
      emit(pending_.data(), pending_.size());
      pending_.clear();
    }
    start = i + 1;
  }
  pending_.append(data + start, size - start);
  while (pending_.size() >= kMaxLine) {
    emit(pending_.data(), kMaxLine);
    pending_.erase(0, kMaxLine);
  }
}

void LinePrefixer::finish() {
  if (!pending_.empty()) emit(pending_.data(), pending_.size());
  pending_.clear();
}

}  // namespace dt::dtrun
