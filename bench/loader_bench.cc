// loader_bench: images per second of the batch loader alone, on CIFAR-10
// binary data and on a JPEG image folder, each without augmentation and with
// its usual crop + flip (CIFAR: pad 4 + random crop 32; JPEG: random resized
// crop, torchvision's defaults), per-channel normalisation in all. The
// consumer only takes the batches, so the figure is what the loader's
// worker threads can feed a trainer. images_per_cpu_s divides by the CPU
// time the process spent instead (all threads): images per second per
// core, which a busy machine disturbs far less than the wall clock. One
// JSON line per configuration:
//   {"bench":"loader","dataset":"cifar10","source":"synthetic","sample":"3x32x32",
//    "images":10000,"batch_size":128,"augment":"crop4+flip","workers":1,"epochs":5,
//    "images_per_s":...,"median_epoch_s":...,"images_per_cpu_s":...}
//
// loader_bench [--images N] [--batch-size B] [--epochs E] [--workers W]
//              [--cifar DIR] [--image-folder DIR] [--jpeg-images N]
//              [--jpeg-side S] [--only cifar|jpeg]
//
// --workers W (default 1) is the loader's num_workers, 0 its automatic count.
// Data: --cifar DIR reads DIR's CIFAR-10 training files (data_batch_1..5.bin,
// as tests/examples/write_synthetic_cifar.py DIR [RECORDS] writes them);
// without it, a file of --images N (default 10000) random images written
// here. --image-folder DIR reads DIR/<class>/<image>; without it, --jpeg-images
// N (default 1000) JPEGs of 256 x 192 written here. JPEG samples are
// resized to S x S (--jpeg-side, default 224).
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/batch_loader.h"
#include "data/cifar_dataset.h"
#include "data/image_folder_dataset.h"
#include "synthetic_images.h"

namespace {

using Clock = std::chrono::steady_clock;
using dt::data::CifarDataset;
using dt::data::ImageFolderDataset;

long parse_positive(const char* flag, const char* text) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value <= 0) {
    std::fprintf(stderr, "loader_bench: %s needs a positive integer, not \"%s\"\n", flag, text);
    std::exit(2);
  }
  return value;
}

struct Settings {
  long images = 10000;
  long batch_size = 128;
  long epochs = 5;
  long workers = 1;
  long jpeg_images = 1000;
  long jpeg_side = 224;
  std::string cifar_dir;
  std::string image_folder;
  std::string only;
};

// One loader configuration over `dataset`: epoch 0 warms the allocator and
// the caches and is not counted; prints the JSON line.
void measure(const std::shared_ptr<const dt::data::Dataset>& dataset, const Settings& s, const char* name,
             const std::string& source, bool augment, const char* augment_name,
             const std::array<float, 3>& mean, const std::array<float, 3>& std, bool resized_crop) {
  dt::data::LoaderOptions options;
  options.batch_size = s.batch_size;
  options.prefetch = 4;
  options.num_workers = static_cast<int>(s.workers);
  options.channel_mean.assign(mean.begin(), mean.end());
  options.channel_std.assign(std.begin(), std.end());
  if (augment) {
    options.augmentation.random_resized_crop = resized_crop;
    options.augmentation.crop_padding = resized_crop ? 0 : 4;
    options.augmentation.horizontal_flip = true;
  }
  const int64_t images = dataset->size();
  dt::data::BatchLoader loader(dataset, dt::data::SplitSampler(images, 1, 0, true, 1), options);
  std::vector<double> seconds;
  double cpu_seconds = 0.0;
  double checksum = 0.0;
  for (long epoch = 0; epoch <= s.epochs; ++epoch) {
    const auto start = Clock::now();
    const std::clock_t cpu_start = std::clock();
    loader.start_epoch(epoch);
    dt::data::Batch batch;
    while (loader.next(batch)) checksum += batch.images.data_as<float>()[0];
    if (epoch > 0) {
      seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
      cpu_seconds += static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
    }
  }
  std::sort(seconds.begin(), seconds.end());
  const double median = seconds[seconds.size() / 2];
  const dt::core::Shape shape = dataset->sample_shape();
  std::printf(
      "{\"bench\":\"loader\",\"dataset\":\"%s\",\"source\":\"%s\",\"sample\":\"%ldx%ldx%ld\",\"images\":%ld,"
      "\"batch_size\":%ld,\"augment\":\"%s\",\"workers\":%ld,\"epochs\":%ld,\"images_per_s\":%.0f,"
      "\"median_epoch_s\":%.4f,\"images_per_cpu_s\":%.0f,\"checksum\":%.3f}\n",
      name, source.c_str(), static_cast<long>(shape[0]), static_cast<long>(shape[1]), static_cast<long>(shape[2]),
      static_cast<long>(images), s.batch_size, augment_name, s.workers, s.epochs,
      static_cast<double>(images) / median, median, static_cast<double>(images * s.epochs) / cpu_seconds, checksum);
  std::fflush(stdout);
}

void run_cifar(const Settings& s) {
  std::string dir = s.cifar_dir;
  const bool synthetic = dir.empty();
  if (synthetic) dir = dt::bench::write_synthetic_cifar(s.images);
  auto dataset = std::make_shared<const CifarDataset>(CifarDataset::from_directory(
      dir, dt::data::CifarVariant::kCifar10, synthetic ? dt::data::CifarSplit::kTest : dt::data::CifarSplit::kTrain));
  if (synthetic) dt::bench::remove_tree(dir);  // read into memory already
  const std::string source = synthetic ? "synthetic" : dir;
  measure(dataset, s, "cifar10", source, false, "none", CifarDataset::kMean, CifarDataset::kStd, false);
  measure(dataset, s, "cifar10", source, true, "crop4+flip", CifarDataset::kMean, CifarDataset::kStd, false);
}

void run_jpeg(const Settings& s) {
  std::string dir = s.image_folder;
  const bool synthetic = dir.empty();
  if (synthetic) dir = dt::bench::write_synthetic_jpeg_folder(s.jpeg_images, 256, 192);
  // The files are read and decoded as batches are made: the folder stays
  // until the runs are done.
  try {
    auto dataset = std::make_shared<const ImageFolderDataset>(dir, s.jpeg_side, s.jpeg_side);
    const std::string source = synthetic ? "synthetic-256x192-q90" : dir;
    measure(dataset, s, "jpeg-folder", source, false, "none", ImageFolderDataset::kMean, ImageFolderDataset::kStd,
            true);
    measure(dataset, s, "jpeg-folder", source, true, "resized-crop+flip", ImageFolderDataset::kMean,
            ImageFolderDataset::kStd, true);
  } catch (...) {
    if (synthetic) dt::bench::remove_tree(dir);
    throw;
  }
  if (synthetic) dt::bench::remove_tree(dir);
}

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    const char* flag = argv[i];
    if (has_value && std::strcmp(flag, "--images") == 0) {
      s.images = parse_positive(flag, argv[++i]);
    } else if (has_value && std::strcmp(flag, "--batch-size") == 0) {
      s.batch_size = parse_positive(flag, argv[++i]);
    } else if (has_value && std::strcmp(flag, "--epochs") == 0) {
      s.epochs = parse_positive(flag, argv[++i]);
    } else if (has_value && std::strcmp(flag, "--workers") == 0) {
      ++i;
      s.workers = std::strcmp(argv[i], "0") == 0 ? 0 : parse_positive(flag, argv[i]);
    } else if (has_value && std::strcmp(flag, "--jpeg-images") == 0) {
      s.jpeg_images = parse_positive(flag, argv[++i]);
    } else if (has_value && std::strcmp(flag, "--jpeg-side") == 0) {
      s.jpeg_side = parse_positive(flag, argv[++i]);
    } else if (has_value && std::strcmp(flag, "--cifar") == 0) {
      s.cifar_dir = argv[++i];
    } else if (has_value && std::strcmp(flag, "--image-folder") == 0) {
      s.image_folder = argv[++i];
    } else if (has_value && std::strcmp(flag, "--only") == 0 &&
               (std::strcmp(argv[i + 1], "cifar") == 0 || std::strcmp(argv[i + 1], "jpeg") == 0)) {
      s.only = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: loader_bench [--images N] [--batch-size B] [--epochs E] [--workers W] [--cifar DIR]\n"
                   "                    [--image-folder DIR] [--jpeg-images N] [--jpeg-side S] [--only cifar|jpeg]\n");
      return 2;
    }
  }
  try {
    if (s.only != "jpeg") run_cifar(s);
    if (s.only != "cifar") run_jpeg(s);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loader_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
