// dt_data_loader_*: IDX datasets in batches.
#include <memory>
#include <string>

#include "c_api/api_guard.h"
#include "c_api/handles.h"
#include "c_api/options.h"
#include "data/batch_loader.h"
#include "data/mnist_dataset.h"
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

dt_data_loader* make_loader(dt::data::MnistDataset dataset, const dt_data_loader_options* given) {
  const dt_data_loader_options o = dt::c_api::read_struct(given, loader_defaults, "options");
  const int last = dt::c_api::raw_enum(o.last_batch);
  if (last < DT_LAST_BATCH_KEEP || last > DT_LAST_BATCH_ROLLOVER) {
    throw Error(ErrorCode::kInvalidArgument, "unknown last_batch value " + std::to_string(last));
  }
  if (o.batch_size <= 0) throw Error(ErrorCode::kInvalidArgument, "batch_size must be positive");
  if (o.prefetch < 1) throw Error(ErrorCode::kInvalidArgument, "prefetch must be at least 1");
  if (!(o.std > 0.0f)) throw Error(ErrorCode::kInvalidArgument, "std must be positive");
  auto shared = std::make_shared<const dt::data::MnistDataset>(std::move(dataset));
  const dt::data::SplitSampler sampler(shared->size(), o.num_parts, o.part_index, o.shuffle != 0, o.seed);
  dt::data::LoaderOptions options;
  options.batch_size = o.batch_size;
  options.last_batch = static_cast<dt::data::LastBatch>(last);
  options.prefetch = o.prefetch;
  options.mean = o.mean;
  options.std = o.std;
  auto owned = std::make_unique<dt_data_loader>();
  owned->impl = std::make_unique<dt::data::BatchLoader>(shared, sampler, options);
  owned->num_samples = static_cast<size_t>(sampler.part_len());
  dt::c_api::register_handle(owned.get(), dt::c_api::HandleKind::kDataLoader);
  return owned.release();
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
    *out = make_loader(dt::data::MnistDataset(images_path, labels_path), options);
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
    *out = make_loader(dt::data::MnistDataset::from_directory(dir ? dir : kDefaultMnistDir, mnist_split), options);
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
