#pragma once

// Helpers shared by the data-layer tests: a scratch directory, IDX files
// written byte by byte (plain or through zlib's gzip writer), error capture
// and a deadline for calls that could hang.

#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <fstream>
#include <functional>
#include <future>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"

namespace dt::data::testing {

using Bytes = std::vector<unsigned char>;

// A fresh directory under /tmp, removed with its files.
class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/dt-data-test.XXXXXX";
    if (::mkdtemp(pattern) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    if (DIR* dir = ::opendir(path_.c_str())) {
      while (dirent* entry = ::readdir(dir)) {
        const std::string name = entry->d_name;
        if (name != "." && name != "..") std::remove((path_ + "/" + name).c_str());
      }
      ::closedir(dir);
    }
    ::rmdir(path_.c_str());
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// An IDX header: magic, type byte, dims byte, big-endian dims.
inline Bytes idx_header(unsigned char type, const std::vector<uint32_t>& dims) {
  Bytes bytes{0, 0, type, static_cast<unsigned char>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<unsigned char>(d >> shift));
  }
  return bytes;
}

// A whole uint8 IDX file.
inline Bytes idx_u8(const std::vector<uint32_t>& dims, const Bytes& data) {
  Bytes bytes = idx_header(0x08, dims);
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

inline void write_plain(const std::string& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

inline void write_gzip(const std::string& path, const Bytes& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  if (file == nullptr) throw std::runtime_error("gzopen failed for " + path);
  const int written = bytes.empty() ? 0 : gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size()));
  const int closed = gzclose(file);
  if (written != static_cast<int>(bytes.size()) || closed != Z_OK) {
    throw std::runtime_error("gzwrite failed for " + path);
  }
}

inline Bytes read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The library error `fn` throws; a test failure (and kInternal) if none.
struct Thrown {
  core::ErrorCode code = core::ErrorCode::kInternal;
  std::string message;
};
inline Thrown thrown_by(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const core::Error& e) {
    return {e.code(), e.what()};
  }
  ADD_FAILURE() << "no dt::core::Error thrown";
  return {};
}

// Runs fn on a thread of its own and says whether it returned within
// `limit`. A call that hangs is left behind, detached, so that the test fails
// instead of hanging; fn must therefore own everything it touches. An
// exception from fn is rethrown here.
inline bool finishes_within(std::chrono::milliseconds limit, std::function<void()> fn) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  std::thread([done, fn = std::move(fn)] {
    try {
      fn();
      done->set_value();
    } catch (...) {
      done->set_exception(std::current_exception());
    }
  }).detach();
  if (finished.wait_for(limit) != std::future_status::ready) return false;
  finished.get();
  return true;
}

// Threads of this process, from /proc/self/task.
inline int thread_count() {
  int count = 0;
  if (DIR* dir = ::opendir("/proc/self/task")) {
    while (dirent* entry = ::readdir(dir)) {
      if (entry->d_name[0] != '.') ++count;
    }
    ::closedir(dir);
  }
  return count;
}

constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

inline bool fashion_mnist_present() {
  struct stat info {};
  return ::stat((std::string(kFashionMnistDir) + "/train-images-idx3-ubyte.gz").c_str(), &info) == 0 &&
         ::stat((std::string(kFashionMnistDir) + "/t10k-labels-idx1-ubyte.gz").c_str(), &info) == 0;
}

}  // namespace dt::data::testing
