#include "signal_pipe.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace dt::dtrun {

namespace {

// Set before the handlers are installed and cleared after they are removed;
// the handler only reads it.
volatile sig_atomic_t g_write_fd = -1;

void on_signal(int signo) {
  const int saved = errno;
  const unsigned char byte = static_cast<unsigned char>(signo);
  // A full pipe drops the byte; SIGCHLD is level-triggered by waitpid
  // anyway and a pending SIGINT/SIGTERM byte is already queued.
  [[maybe_unused]] const ssize_t n = write(g_write_fd, &byte, 1);
  errno = saved;
}

void install(int signo, void (*handler)(int), struct sigaction* old) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART | (signo == SIGCHLD ? SA_NOCLDSTOP : 0);
  if (sigaction(signo, &sa, old) != 0) {
    throw std::runtime_error(std::string("sigaction: ") + std::strerror(errno));
  }
}

}  // namespace

SignalPipe::SignalPipe() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
  read_.reset(fds[0]);
  write_.reset(fds[1]);
  g_write_fd = fds[1];
  install(SIGINT, on_signal, &old_int_);
  install(SIGTERM, on_signal, &old_term_);
  install(SIGHUP, on_signal, &old_hup_);
  install(SIGCHLD, on_signal, &old_chld_);
  install(SIGPIPE, SIG_IGN, &old_pipe_);
}

SignalPipe::~SignalPipe() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
  sigaction(SIGHUP, &old_hup_, nullptr);
  sigaction(SIGCHLD, &old_chld_, nullptr);
  sigaction(SIGPIPE, &old_pipe_, nullptr);
  g_write_fd = -1;
}

std::vector<int> SignalPipe::drain() {
  std::vector<int> out;
  unsigned char buf[64];
  for (;;) {
    const ssize_t n = read(read_.get(), buf, sizeof buf);
    if (n > 0) {
      out.insert(out.end(), buf, buf + n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;  // EAGAIN: empty
  }
  return out;
}

}  // namespace dt::dtrun
