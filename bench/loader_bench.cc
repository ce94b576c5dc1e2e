// loader_bench: images per second of the batch loader alone, on a synthetic
// CIFAR-10 file of 10,000 images that it writes itself (random pixels,
// fixed seed), with and without the CIFAR augmentation (pad 4 + random
// crop 32, horizontal flip), per-channel normalisation in both. The
// consumer only takes the batches, so the figure is what the loader's
// worker threads can feed a trainer. images_per_cpu_s divides by the CPU
// time the process spent instead (all threads), which a busy machine
// disturbs far less than the wall clock. One JSON line per configuration:
//   {"bench":"loader","dataset":"cifar10-synthetic","images":10000,
//    "batch_size":128,"augment":"crop4+flip","workers":1,"epochs":5,
//    "images_per_s":...,"median_epoch_s":...,"images_per_cpu_s":...}
//
// loader_bench [--images N] [--batch-size B] [--epochs E] [--workers W]
//
// --workers W (default 1) is the loader's num_workers, 0 its automatic count.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/batch_loader.h"
#include "data/cifar_dataset.h"

namespace {

using Clock = std::chrono::steady_clock;
using dt::data::CifarDataset;

long parse_positive(const char* flag, const char* text) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value <= 0) {
    std::fprintf(stderr, "loader_bench: %s needs a positive integer, not \"%s\"\n", flag, text);
    std::exit(2);
  }
  return value;
}

std::string write_synthetic_cifar(long images) {
  char pattern[] = "/tmp/dt-loader-bench.XXXXXX";
  if (::mkdtemp(pattern) == nullptr) throw std::runtime_error("mkdtemp failed");
  const std::string path = std::string(pattern) + "/test_batch.bin";
  std::mt19937 rng(42);
  std::vector<char> record(CifarDataset::record_bytes(dt::data::CifarVariant::kCifar10));
  std::ofstream out(path, std::ios::binary);
  for (long i = 0; i < images; ++i) {
    record[0] = static_cast<char>(i % 10);
    for (size_t b = 1; b < record.size(); ++b) record[b] = static_cast<char>(rng() & 0xFF);
    out.write(record.data(), static_cast<std::streamsize>(record.size()));
  }
  if (!out) throw std::runtime_error("cannot write " + path);
  return std::string(pattern);
}

}  // namespace

int main(int argc, char** argv) {
  long images = 10000, batch_size = 128, epochs = 5, workers = 1;
  for (int i = 1; i < argc; ++i) {
    if (i + 1 < argc && std::strcmp(argv[i], "--images") == 0) {
      images = parse_positive(argv[i], argv[i + 1]);
      ++i;
    } else if (i + 1 < argc && std::strcmp(argv[i], "--batch-size") == 0) {
      batch_size = parse_positive(argv[i], argv[i + 1]);
      ++i;
    } else if (i + 1 < argc && std::strcmp(argv[i], "--epochs") == 0) {
      epochs = parse_positive(argv[i], argv[i + 1]);
      ++i;
    } else if (i + 1 < argc && std::strcmp(argv[i], "--workers") == 0) {
      workers = std::strcmp(argv[i + 1], "0") == 0 ? 0 : parse_positive(argv[i], argv[i + 1]);
      ++i;
    } else {
      std::fprintf(stderr, "usage: loader_bench [--images N] [--batch-size B] [--epochs E] [--workers W]\n");
      return 2;
    }
  }
  try {
    const std::string dir = write_synthetic_cifar(images);
    auto dataset = std::make_shared<const CifarDataset>(
        CifarDataset::from_directory(dir, dt::data::CifarVariant::kCifar10, dt::data::CifarSplit::kTest));
    ::unlink((dir + "/test_batch.bin").c_str());
    ::rmdir(dir.c_str());

    for (const bool augment : {false, true}) {
      dt::data::LoaderOptions options;
      options.batch_size = batch_size;
      options.prefetch = 4;
      options.num_workers = static_cast<int>(workers);
      options.channel_mean.assign(CifarDataset::kMean.begin(), CifarDataset::kMean.end());
      options.channel_std.assign(CifarDataset::kStd.begin(), CifarDataset::kStd.end());
      if (augment) {
        options.augmentation.crop_padding = 4;
        options.augmentation.horizontal_flip = true;
      }
      dt::data::BatchLoader loader(dataset, dt::data::SplitSampler(images, 1, 0, true, 1), options);
      std::vector<double> seconds;
      double cpu_seconds = 0.0;
      double checksum = 0.0;
      // Epoch 0 warms the allocator and the caches; it is not counted.
      for (long epoch = 0; epoch <= epochs; ++epoch) {
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
      std::printf(
          "{\"bench\":\"loader\",\"dataset\":\"cifar10-synthetic\",\"images\":%ld,\"batch_size\":%ld,"
          "\"augment\":\"%s\",\"workers\":%ld,\"epochs\":%ld,\"images_per_s\":%.0f,\"median_epoch_s\":%.4f,"
          "\"images_per_cpu_s\":%.0f,\"checksum\":%.3f}\n",
          images, batch_size, augment ? "crop4+flip" : "none", workers, epochs, static_cast<double>(images) / median,
          median, static_cast<double>(images * epochs) / cpu_seconds, checksum);
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loader_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
