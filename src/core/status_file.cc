#include "core/status_file.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "core/error.h"
#include "core/log.h"
#include "core/parameter_table.h"

namespace dt::core {

std::unique_ptr<StatusFile> StatusFile::from_environment(std::string facility) {
  const char* path = read_parameter("DT_STATUS_FILE");
  if (path == nullptr || *path == '\0') return nullptr;
  double every_s = 1;
  if (const char* text = read_parameter("DT_STATUS_EVERY_S"); text != nullptr && *text != '\0') {
    char* end = nullptr;
    errno = 0;
    every_s = std::strtod(text, &end);
    if (errno != 0 || end == text || *end != '\0' || !(every_s > 0) || every_s > 1e6) {
      throw Error(ErrorCode::kInvalidArgument,
                  std::string("DT_STATUS_EVERY_S=\"") + text + "\" is not a positive number of seconds");
    }
  }
  return std::make_unique<StatusFile>(path, every_s, std::move(facility));
}

StatusFile::StatusFile(std::string path, double every_s, std::string facility)
    : path_(std::move(path)),
      every_(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(every_s))),
      facility_(std::move(facility)) {}

void StatusFile::write(const std::string& line, Clock::time_point now) {
  written_ = now;
  const std::string tmp = path_ + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << line << "\n";
    if (!out) {
      log(LogLevel::kDebug, facility_, "cannot write DT_STATUS_FILE " + tmp);
      return;
    }
  }
  if (std::rename(tmp.c_str(), path_.c_str()) != 0) {
    log(LogLevel::kDebug, facility_, "cannot rename " + tmp + " to DT_STATUS_FILE " + path_);
  }
}

}  // namespace dt::core
