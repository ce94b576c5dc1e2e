#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <string>

#include "line_prefixer.h"
#include "supervisor.h"

namespace dt::dtrun {
namespace {

// What a LinePrefixer writes, read back from a temporary file (a pipe would
// hold less than the longest line).
class Captured {
 public:
  Captured() : file_(std::tmpfile()) { EXPECT_NE(file_, nullptr); }
  ~Captured() { std::fclose(file_); }
  int fd() const { return fileno(file_); }
  // What was written since the last call.
  std::string text() {
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = pread(fd(), buf, sizeof buf, static_cast<off_t>(read_))) > 0) {
      out.append(buf, static_cast<size_t>(n));
      read_ += static_cast<size_t>(n);
    }
    return out;
  }

 private:
  std::FILE* file_;
  size_t read_ = 0;
};

TEST(DtrunLinePrefixer, WholeLinesArePrefixedAcrossChunks) {
  Captured out, log;
  LinePrefixer p("worker 1", "", out.fd(), log.fd());
  p.feed("epo", 3);
  EXPECT_EQ(out.text(), "");  // held until the line ends
  p.feed("ch 1\nacc", 8);
  p.feed("=0.9\n\nlast", 10);
  p.finish();
  EXPECT_EQ(out.text(), "[worker 1] epoch 1\n[worker 1] acc=0.9\n[worker 1] \n[worker 1] last\n");
  EXPECT_EQ(log.text(), "epoch 1\nacc=0.9\n\nlast");  // the log keeps the raw bytes
}

TEST(DtrunLinePrefixer, ColourWrapsOnlyThePrefix) {
  Captured out;
  LinePrefixer p("scheduler", "35", out.fd(), -1);
  p.feed("up\n", 3);
  EXPECT_EQ(out.text(), "\033[35m[scheduler]\033[0m up\n");
}

TEST(DtrunLinePrefixer, OverlongLinesAreWrittenInPieces) {
  Captured out;
  LinePrefixer p("s", "", out.fd(), -1);
  const std::string big(LinePrefixer::kMaxLine + 10, 'x');
  p.feed(big.data(), big.size());
  EXPECT_EQ(out.text(), "[s] " + std::string(LinePrefixer::kMaxLine, 'x') + "\n");
  p.finish();
  EXPECT_EQ(out.text(), "[s] xxxxxxxxxx\n");
}

TEST(DtrunSupervisor, WaitStatusesReadAsAShellWould) {
  EXPECT_EQ(describe_wait_status(3 << 8), "exited with status 3");
  EXPECT_EQ(exit_code_of(3 << 8), 3);
  EXPECT_EQ(describe_wait_status(9), "killed by signal 9 (Killed)");
  EXPECT_EQ(exit_code_of(9), 137);
  EXPECT_EQ(ProcessName("worker", 1).text(), "worker 1");
  EXPECT_EQ(ProcessName("scheduler").text(), "scheduler");
}

}  // namespace
}  // namespace dt::dtrun
