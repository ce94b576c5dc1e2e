#include "train/status_file.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "core/error.h"
#include "core/log.h"
#include "core/parameter_table.h"

namespace dt::train {

using core::Error;
using core::ErrorCode;

std::unique_ptr<StatusFile> StatusFile::from_environment() {
  const char* path = core::read_parameter("DT_STATUS_FILE");
  if (path == nullptr || *path == '\0') return nullptr;
  double every_s = 1;
  if (const char* text = core::read_parameter("DT_STATUS_EVERY_S"); text != nullptr && *text != '\0') {
    char* end = nullptr;
    errno = 0;
    every_s = std::strtod(text, &end);
    if (errno != 0 || end == text || *end != '\0' || !(every_s > 0) || every_s > 1e6) {
      throw Error(ErrorCode::kInvalidArgument,
                  std::string("DT_STATUS_EVERY_S=\"") + text + "\" is not a positive number of seconds");
    }
  }
  return std::make_unique<StatusFile>(path, every_s);
}

StatusFile::StatusFile(std::string path, double every_s)
    : path_(std::move(path)),
      every_(std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(every_s))) {}

StatusFile::~StatusFile() {
  if (numbers_.steps > 0) write();
}

void StatusFile::batch_done(int64_t images, double compute_s, double exchange_s, const core::Traffic& traffic) {
  const auto now = std::chrono::steady_clock::now();
  if (numbers_.steps == 0) {
    // The first batch began compute_s + exchange_s ago.
    started_ = now - std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(compute_s + exchange_s));
    written_ = started_;
  }
  ++numbers_.steps;
  numbers_.images += images;
  numbers_.compute_s += compute_s;
  numbers_.exchange_s += exchange_s;
  numbers_.traffic = traffic;
  numbers_.wall_s = std::chrono::duration<double>(now - started_).count();
  if (now - written_ < every_) return;
  written_ = now;
  write();
}

void StatusFile::write() const {
  // The summary is an aid: a file that cannot be written is a debug line
  // in the log, never a failed step.
  const std::string tmp = path_ + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << format_status(numbers_) << "\n";
    if (!out) {
      core::log(core::LogLevel::kDebug, "trainer", "cannot write DT_STATUS_FILE " + tmp);
      return;
    }
  }
  if (std::rename(tmp.c_str(), path_.c_str()) != 0) {
    core::log(core::LogLevel::kDebug, "trainer", "cannot rename " + tmp + " to DT_STATUS_FILE " + path_);
  }
}

}  // namespace dt::train
