#include "data/image_folder_dataset.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <memory>

#include "core/error.h"
#include "data/image_decode.h"
#include "data/image_resize.h"

namespace dt::data {

namespace {

using core::Error;
using core::ErrorCode;

struct DirCloser {
  void operator()(DIR* dir) const { ::closedir(dir); }
};

// The visible entries of `dir`, sorted by name (bytewise, as Python's
// sorted() orders torchvision's class names).
std::vector<std::string> list(const std::string& dir) {
  std::unique_ptr<DIR, DirCloser> handle(::opendir(dir.c_str()));
  if (!handle) throw Error(ErrorCode::kIo, "cannot list image folder " + dir + ": " + std::strerror(errno));
  std::vector<std::string> names;
  for (;;) {
    errno = 0;
    const dirent* entry = ::readdir(handle.get());
    if (entry == nullptr) {
      if (errno != 0) throw Error(ErrorCode::kIo, "cannot list image folder " + dir + ": " + std::strerror(errno));
      break;
    }
    if (entry->d_name[0] != '.') names.emplace_back(entry->d_name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The file type behind a path, following links; 0 when it cannot be stat'ed.
mode_t kind(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 ? info.st_mode & S_IFMT : 0;
}

bool is_image_name(const std::string& name) {
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos) return false;
  std::string ext = name.substr(dot + 1);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == "jpg" || ext == "jpeg" || ext == "png";
}

}  // namespace

ImageFolderDataset::ImageFolderDataset(const std::string& root, int64_t height, int64_t width)
    : height_(height), width_(width) {
  core::require(height >= 1 && height <= kMaxSide && width >= 1 && width <= kMaxSide, ErrorCode::kInvalidArgument,
                "image folder samples need a height and width in [1, " + std::to_string(kMaxSide) + "], not " +
                    std::to_string(height) + " x " + std::to_string(width));
  struct stat info {};
  if (::stat(root.c_str(), &info) != 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) throw Error(ErrorCode::kNotFound, "image folder " + root + " does not exist");
    throw Error(ErrorCode::kIo, "cannot stat image folder " + root + ": " + std::strerror(err));
  }
  if (!S_ISDIR(info.st_mode)) throw Error(ErrorCode::kIo, "image folder " + root + " is not a folder");
  for (const std::string& name : list(root)) {
    const std::string dir = root + "/" + name;
    if (kind(dir) != S_IFDIR) continue;
    const auto label = static_cast<int32_t>(classes_.size());
    classes_.push_back(name);
    const size_t first = files_.size();
    for (const std::string& file : list(dir)) {
      const std::string path = dir + "/" + file;
      if (kind(path) != S_IFREG) throw Error(ErrorCode::kIo, "image folder entry " + path + " is not a file");
      if (!is_image_name(file)) {
        throw Error(ErrorCode::kIo, "image folder file " + path + " is not an image: its name does not end in " +
                                        ".jpg, .jpeg or .png");
      }
      files_.push_back({path, label});
    }
    if (files_.size() == first) throw Error(ErrorCode::kIo, "class folder " + dir + " holds no image");
  }
  if (classes_.empty()) {
    throw Error(ErrorCode::kIo, "image folder " + root + " holds no class folder (expected root/<class>/<images>)");
  }
}

const ImageFolderDataset::File& ImageFolderDataset::file(int64_t index) const {
  if (index < 0 || index >= size()) {
    throw Error(ErrorCode::kInvalidArgument,
                "sample index " + std::to_string(index) + " is outside [0, " + std::to_string(size()) + ")");
  }
  return files_[static_cast<size_t>(index)];
}

const std::string& ImageFolderDataset::path(int64_t index) const { return file(index).path; }

int32_t ImageFolderDataset::label(int64_t index) const { return file(index).label; }

int32_t ImageFolderDataset::read_sample(int64_t index, uint8_t* pixels) const {
  return read_region(
      index, [](int64_t height, int64_t width) { return CropBox{0, 0, height, width}; }, pixels);
}

int32_t ImageFolderDataset::read_region(int64_t index, const ChooseBox& choose, uint8_t* pixels) const {
  const File& f = file(index);
  resize_chosen_box(decode_image(f.path), choose, height_, width_, f.path, pixels);
  return f.label;
}

}  // namespace dt::data
