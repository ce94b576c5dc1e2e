#include "train/checkpoint_directory.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/log.h"

namespace dt::train {

using core::Error;
using core::ErrorCode;

namespace {

constexpr const char* kManifest = "MANIFEST.json";
constexpr const char* kEpochPrefix = "epoch-";

// text to path by a temporary file, fsync and rename: readers see the old
// file or the new one, never a part.
void replace_file(const std::string& path, const std::string& text) {
  const std::string temp = path + ".tmp";
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(ErrorCode::kIo, "cannot write " + temp + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string reason = std::strerror(errno);
      ::close(fd);
      ::unlink(temp.c_str());
      throw Error(ErrorCode::kIo, "writing " + temp + ": " + reason);
    }
    done += static_cast<size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  const std::string reason = synced ? "" : std::strerror(errno);
  ::close(fd);
  if (!synced || ::rename(temp.c_str(), path.c_str()) != 0) {
    ::unlink(temp.c_str());
    throw Error(ErrorCode::kIo, "replacing " + path + ": " + (synced ? std::strerror(errno) : reason));
  }
}

}  // namespace

CheckpointDirectory::CheckpointDirectory(std::string path, int rank, int num_workers)
    : path_(std::move(path)), rank_(rank), num_workers_(num_workers) {
  if (path_.empty()) throw Error(ErrorCode::kInvalidArgument, "checkpoint directory: the path is empty");
  if (num_workers < 1 || rank < 0 || rank >= num_workers) {
    throw Error(ErrorCode::kInvalidArgument, "checkpoint directory: rank " + std::to_string(rank) + " of " +
                                                 std::to_string(num_workers) + " workers");
  }
  std::error_code ec;
  std::filesystem::create_directories(path_, ec);
  if (ec || !std::filesystem::is_directory(path_)) {
    throw Error(ErrorCode::kIo, "checkpoint directory " + path_ + ": " + (ec ? ec.message() : "not a directory"));
  }
}

std::string CheckpointDirectory::epoch_dir(int epoch) const {
  return path_ + "/" + kEpochPrefix + std::to_string(epoch);
}

std::string CheckpointDirectory::manifest() const { return path_ + "/" + kManifest; }

std::string CheckpointDirectory::worker_file(int epoch) const {
  const std::string dir = epoch_dir(epoch);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(ErrorCode::kIo, "checkpoint directory " + dir + ": " + ec.message());
  return dir + "/worker-" + std::to_string(rank_) + ".safetensors";
}

std::string CheckpointDirectory::resume_file(int epoch) const {
  const auto file_of = [&](int rank) { return epoch_dir(epoch) + "/worker-" + std::to_string(rank) + ".safetensors"; };
  std::error_code ec;
  if (std::filesystem::exists(file_of(rank_), ec)) return file_of(rank_);
  for (int r = 0; r < num_workers_; ++r) {
    if (!std::filesystem::exists(file_of(r), ec)) continue;
    core::logf(core::LogLevel::kInfo, "",
               "worker %d wrote no checkpoint of epoch %d (the job went on without it then); it resumes from worker "
               "%d's",
               rank_, epoch, r);
    return file_of(r);
  }
  throw Error(ErrorCode::kNotFound, "checkpoint directory " + path_ + ": epoch " + std::to_string(epoch) +
                                        " has no worker's checkpoint (" + file_of(rank_) + " and the others)");
}

void CheckpointDirectory::commit(int epoch, kvstore::KVStore* kv) const {
  // Every worker's file of this epoch is renamed into place before anyone
  // passes the barrier, so the manifest never names an epoch with a file
  // missing.
  if (kv != nullptr) kv->barrier();
  if (rank_ != 0) return;
  const nlohmann::json m = {{"format", "disttrain-checkpoint-directory"},
                            {"version", 1},
                            {"epoch", epoch},
                            {"workers", num_workers_}};
  replace_file(manifest(), m.dump() + "\n");
  // Older epochs are no longer needed; one that cannot be removed is left.
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(path_, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kEpochPrefix, 0) != 0) continue;
    const std::string number = name.substr(std::strlen(kEpochPrefix));
    if (number.empty() || number.find_first_not_of("0123456789") != std::string::npos || number.size() > 9) continue;
    if (std::stoi(number) < epoch) std::filesystem::remove_all(entry.path(), ec);
  }
}

std::optional<int> CheckpointDirectory::last_complete_epoch() const {
  std::ifstream in(manifest());
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json m = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  const auto bad = [&](const std::string& why) { return Error(ErrorCode::kIo, manifest() + ": " + why); };
  if (m.is_discarded() || !m.is_object()) throw bad("not a JSON object");
  if (m.value("format", "") != "disttrain-checkpoint-directory") throw bad("not a disttrain checkpoint manifest");
  const auto epoch = m.find("epoch");
  const auto workers = m.find("workers");
  if (epoch == m.end() || !epoch->is_number_integer() || epoch->get<int64_t>() < 0 ||
      epoch->get<int64_t>() > 1000000000) {
    throw bad("\"epoch\" is not a count");
  }
  if (workers == m.end() || !workers->is_number_integer()) throw bad("\"workers\" is not a count");
  if (workers->get<int64_t>() != num_workers_) {
    throw Error(ErrorCode::kInvalidArgument, manifest() + " was written by a job of " +
                                                 std::to_string(workers->get<int64_t>()) + " workers; this job has " +
                                                 std::to_string(num_workers_) +
                                                 " (each worker resumes from its own rank's file)");
  }
  return static_cast<int>(epoch->get<int64_t>());
}

}  // namespace dt::train
