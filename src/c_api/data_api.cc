// dt_data_loader_*: IDX, CIFAR, image-folder and RecordIO datasets in batches.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "c_api/api_guard.h"
#include "c_api/handles.h"
#include "c_api/options.h"
#include "data/batch_loader.h"
#include "data/cifar_dataset.h"
#include "data/image_folder_dataset.h"
#include "data/mnist_dataset.h"
#include "data/recordio_dataset.h"
#include "data/split_sampler.h"
#include "dt_c_api.h"

using dt::c_api::arg;
using dt::c_api::guarded;
using dt::c_api::handle;
using dt::core::Error;
using dt::core::ErrorCode;

dt_data_loader::~dt_data_loader() = default;

namespace {

constexpr const char* kDefaultMnistDir = "/usr/share/datasets/fashion-mnist";

void loader_defaults(dt_data_loader_options* options) {
  options->batch_size = 64;
  options->last_batch = DT_LAST_BATCH_KEEP;
  options->shuffle = 1;
  options->seed = 0;
  options->num_parts = 1;
  options->part_index = 0;
  options->prefetch = 2;
  options->mean = 0.2860f;
  options->std = 0.3530f;
}

// The 0.1.0 struct ended with std; the fields after it must start past its
// sizeof, not in its tail padding, which an older caller's bytes fill with
// anything (see "Option and info structs").
constexpr size_t kEndOfStd = offsetof(dt_data_loader_options, std) + sizeof(float);
constexpr size_t kSizeBeforeAugmentation =
    (kEndOfStd + alignof(dt_data_loader_options) - 1) / alignof(dt_data_loader_options) *
    alignof(dt_data_loader_options);
static_assert(offsetof(dt_data_loader_options, random_crop_padding) == kSizeBeforeAugmentation,
              "fields appended to dt_data_loader_options must start past the older sizeof");
// Likewise the random resized crop's past the struct that ended with the
// channel statistics.
constexpr size_t kEndOfChannelStats = offsetof(dt_data_loader_options, num_channel_stats) + sizeof(size_t);
constexpr size_t kSizeBeforeResizedCrop =
    (kEndOfChannelStats + alignof(dt_data_loader_options) - 1) / alignof(dt_data_loader_options) *
    alignof(dt_data_loader_options);
static_assert(offsetof(dt_data_loader_options, random_resized_crop) == kSizeBeforeResizedCrop,
              "fields appended to dt_data_loader_options must start past the older sizeof");
// And num_workers past the struct that ended with the resized crop (an
// int64_t, so that it does not fall into that struct's tail padding).
constexpr size_t kEndOfResizedCrop =
    offsetof(dt_data_loader_options, random_resized_crop_max_ratio) + sizeof(float);
constexpr size_t kSizeBeforeNumWorkers =
    (kEndOfResizedCrop + alignof(dt_data_loader_options) - 1) / alignof(dt_data_loader_options) *
    alignof(dt_data_loader_options);
static_assert(offsetof(dt_data_loader_options, num_workers) == kSizeBeforeNumWorkers,
              "fields appended to dt_data_loader_options must start past the older sizeof");

// A range option whose 0 means torchvision's default.
double or_default(float given, double standard) { return given == 0.0f ? standard : static_cast<double>(given); }

// The statistics a dataset is normalised with when the caller gives none.
struct StandardStatistics {
  std::vector<float> mean;  // empty: the options' scalar mean and std
  std::vector<float> std;
};

dt_data_loader* make_loader(std::shared_ptr<const dt::data::Dataset> dataset, const dt_data_loader_options* given,
                            const StandardStatistics& standard) {
  const dt_data_loader_options o = dt::c_api::read_struct(given, loader_defaults, "options");
  const int last = dt::c_api::raw_enum(o.last_batch);
  if (last < DT_LAST_BATCH_KEEP || last > DT_LAST_BATCH_ROLLOVER) {
    throw Error(ErrorCode::kInvalidArgument, "unknown last_batch value " + std::to_string(last));
  }
  if (o.batch_size <= 0) throw Error(ErrorCode::kInvalidArgument, "batch_size must be positive");
  if (o.prefetch < 1) throw Error(ErrorCode::kInvalidArgument, "prefetch must be at least 1");
  if (o.num_workers < 0 || o.num_workers > 256) {
    throw Error(ErrorCode::kInvalidArgument,
                "num_workers must be 0 (automatic) or 1 to 256, not " + std::to_string(o.num_workers));
  }
  if (o.random_flip != 0 && o.random_flip != 1) {
    throw Error(ErrorCode::kInvalidArgument, "random_flip must be 0 or 1, not " + std::to_string(o.random_flip));
  }
  if (o.random_resized_crop != 0 && o.random_resized_crop != 1) {
    throw Error(ErrorCode::kInvalidArgument,
                "random_resized_crop must be 0 or 1, not " + std::to_string(o.random_resized_crop));
  }
  if (o.random_crop_padding < 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "random_crop_padding must not be negative, not " + std::to_string(o.random_crop_padding));
  }
  if (o.num_channel_stats != 0 && (o.channel_mean == nullptr || o.channel_std == nullptr)) {
    throw Error(ErrorCode::kInvalidArgument, "num_channel_stats is " + std::to_string(o.num_channel_stats) +
                                                 " but channel_mean or channel_std is NULL");
  }
  dt::data::LoaderOptions options;
  options.batch_size = o.batch_size;
  options.last_batch = static_cast<dt::data::LastBatch>(last);
  options.prefetch = o.prefetch;
  options.num_workers = static_cast<int>(o.num_workers);
  options.mean = o.mean;
  options.std = o.std;
  if (o.num_channel_stats != 0) {
    // The loader checks the count against the dataset's channels.
    options.channel_mean.assign(o.channel_mean, o.channel_mean + o.num_channel_stats);
    options.channel_std.assign(o.channel_std, o.channel_std + o.num_channel_stats);
  } else {
    if (standard.mean.empty() && !(o.std > 0.0f)) {
      throw Error(ErrorCode::kInvalidArgument, "std must be positive");
    }
    options.channel_mean = standard.mean;
    options.channel_std = standard.std;
  }
  options.augmentation.crop_padding = o.random_crop_padding;
  options.augmentation.horizontal_flip = o.random_flip != 0;
  // The loader checks the ranges, and that the dataset has source images.
  dt::data::Augmentation& augmentation = options.augmentation;
  augmentation.random_resized_crop = o.random_resized_crop != 0;
  augmentation.resized_crop_scale = {or_default(o.random_resized_crop_min_scale, augmentation.resized_crop_scale[0]),
                                     or_default(o.random_resized_crop_max_scale, augmentation.resized_crop_scale[1])};
  augmentation.resized_crop_ratio = {or_default(o.random_resized_crop_min_ratio, augmentation.resized_crop_ratio[0]),
                                     or_default(o.random_resized_crop_max_ratio, augmentation.resized_crop_ratio[1])};
  options.augment_seed = o.seed;
  const dt::data::SplitSampler sampler(dataset->size(), o.num_parts, o.part_index, o.shuffle != 0, o.seed);
  auto owned = std::make_unique<dt_data_loader>();
  owned->impl = std::make_unique<dt::data::BatchLoader>(dataset, sampler, options);
  owned->num_samples = static_cast<size_t>(sampler.part_len());
  return dt::c_api::adopt_handle(std::move(owned));
}

// ImageNet's, for the decoded-image datasets (image folders, RecordIO sets).
StandardStatistics imagenet_statistics() {
  using dt::data::ImageFolderDataset;
  return {{ImageFolderDataset::kMean.begin(), ImageFolderDataset::kMean.end()},
          {ImageFolderDataset::kStd.begin(), ImageFolderDataset::kStd.end()}};
}

dt_data_loader* make_mnist_loader(dt::data::MnistDataset dataset, const dt_data_loader_options* given) {
  return make_loader(std::make_shared<const dt::data::MnistDataset>(std::move(dataset)), given, {});
}

}  // namespace

extern "C" {

dt_status dt_data_loader_options_init(dt_data_loader_options* options, size_t struct_size) {
  return guarded(__func__, [&] { dt::c_api::init_struct(options, struct_size, loader_defaults, "options"); });
}

dt_status dt_data_loader_create(dt_data_loader** out, const char* images_path, const char* labels_path,
                                const dt_data_loader_options* options) {
  return guarded(__func__, [&] {
    arg(out, "out");
    arg(images_path, "images_path");
    arg(labels_path, "labels_path");
    *out = make_mnist_loader(dt::data::MnistDataset(images_path, labels_path), options);
  });
}

dt_status dt_data_loader_create_mnist(dt_data_loader** out, const char* dir, const char* split,
                                      const dt_data_loader_options* options) {
  return guarded(__func__, [&] {
    arg(out, "out");
    arg(split, "split");
    const std::string which = split;
    if (which != "train" && which != "t10k" && which != "test") {
      throw Error(ErrorCode::kInvalidArgument, "split must be \"train\" or \"t10k\", not \"" + which + "\"");
    }
    const auto mnist_split = which == "train" ? dt::data::MnistSplit::kTrain : dt::data::MnistSplit::kTest;
    *out = make_mnist_loader(dt::data::MnistDataset::from_directory(dir ? dir : kDefaultMnistDir, mnist_split),
                             options);
  });
}

dt_status dt_data_loader_create_cifar(dt_data_loader** out, const char* dir, const char* split, int32_t variant,
                                      const dt_data_loader_options* options) {
  return guarded(__func__, [&] {
    arg(out, "out");
    arg(dir, "dir");
    arg(split, "split");
    const std::string which = split;
    if (which != "train" && which != "test") {
      throw Error(ErrorCode::kInvalidArgument, "split must be \"train\" or \"test\", not \"" + which + "\"");
    }
    if (variant != 10 && variant != 100) {
      throw Error(ErrorCode::kInvalidArgument, "variant must be 10 or 100, not " + std::to_string(variant));
    }
    const auto cifar_variant = variant == 10 ? dt::data::CifarVariant::kCifar10 : dt::data::CifarVariant::kCifar100;
    const auto cifar_split = which == "train" ? dt::data::CifarSplit::kTrain : dt::data::CifarSplit::kTest;
    auto dataset = std::make_shared<const dt::data::CifarDataset>(
        dt::data::CifarDataset::from_directory(dir, cifar_variant, cifar_split));
    using dt::data::CifarDataset;
    const StandardStatistics cifar10{{CifarDataset::kMean.begin(), CifarDataset::kMean.end()},
                                     {CifarDataset::kStd.begin(), CifarDataset::kStd.end()}};
    *out = make_loader(std::move(dataset), options, cifar10);
  });
}

dt_status dt_data_loader_create_image_folder(dt_data_loader** out, const char* dir, int64_t height, int64_t width,
                                             const dt_data_loader_options* options) {
  return guarded(__func__, [&] {
    arg(out, "out");
    arg(dir, "dir");
    using dt::data::ImageFolderDataset;
    auto dataset = std::make_shared<const ImageFolderDataset>(dir, height, width);
    *out = make_loader(std::move(dataset), options, imagenet_statistics());
  });
}

dt_status dt_data_loader_create_recordio(dt_data_loader** out, const char* rec_path, const char* idx_path,
                                         int64_t height, int64_t width, const dt_data_loader_options* options) {
  return guarded(__func__, [&] {
    arg(out, "out");
    arg(rec_path, "rec_path");
    using dt::data::RecordIODataset;
    const std::string index = idx_path != nullptr ? idx_path : RecordIODataset::sibling_index(rec_path);
    auto dataset = std::make_shared<const RecordIODataset>(rec_path, index, height, width);
    *out = make_loader(std::move(dataset), options, imagenet_statistics());
  });
}

void dt_data_loader_free(dt_data_loader* loader) { dt::c_api::free_handle(loader, __func__); }

dt_status dt_data_loader_num_samples(size_t* out, const dt_data_loader* loader) {
  return guarded(__func__, [&] {
    arg(out, "out");
    *out = handle(loader, "loader").num_samples;
  });
}

dt_status dt_data_loader_num_batches(size_t* out, const dt_data_loader* loader) {
  return guarded(__func__, [&] {
    arg(out, "out");
    *out = static_cast<size_t>(handle(loader, "loader").impl->batches_per_epoch());
  });
}

dt_status dt_data_loader_start_epoch(dt_data_loader* loader, int32_t epoch) {
  return guarded(__func__, [&] {
    auto& l = handle(loader, "loader");
    if (epoch < 0) throw Error(ErrorCode::kInvalidArgument, "epoch must not be negative");
    l.impl->start_epoch(epoch);
  });
}

dt_status dt_data_loader_next(dt_ndarray** out_data, dt_ndarray** out_labels, int32_t* out_has_batch,
                              dt_data_loader* loader) {
  return guarded(__func__, [&] {
    arg(out_data, "out_data");
    arg(out_labels, "out_labels");
    arg(out_has_batch, "out_has_batch");
    auto& l = handle(loader, "loader");
    dt::data::Batch batch;
    if (!l.impl->next(batch)) {
      *out_has_batch = 0;
      return;
    }
    dt_ndarray* data = dt::c_api::new_handle<dt_ndarray>(batch.images);
    dt_ndarray* labels = nullptr;
    try {
      labels = dt::c_api::new_handle<dt_ndarray>(batch.labels);
    } catch (...) {
      dt::c_api::free_handle(data, __func__);
      throw;
    }
    *out_data = data;
    *out_labels = labels;
    *out_has_batch = 1;
  });
}

}  // extern "C"
