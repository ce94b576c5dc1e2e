#include "train/metrics.h"

#include <string>

#include "core/error.h"

namespace dt::train {

namespace {

template <typename Label>
int64_t count_correct_as(const float* logits, int64_t rows, int64_t classes, const Label* labels) {
  int64_t correct = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = logits + r * classes;
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c) {
      if (row[c] > row[best]) best = c;
    }
    correct += best == static_cast<int64_t>(labels[r]);
  }
  return correct;
}

core::NDArray on_host(const core::NDArray& array) {
  if (array.context()->is_cpu()) return array;
  core::NDArray host = core::NDArray::empty(core::make_cpu_context(), array.dtype(), array.shape());
  host.copy_from(array);
  return host;
}

}  // namespace

int64_t count_correct(const core::NDArray& logits, const core::NDArray& labels) {
  using core::DType;
  if (logits.shape().ndim() != 2 || labels.shape().ndim() != 1 || logits.shape()[0] != labels.shape()[0]) {
    throw core::Error(core::ErrorCode::kShapeMismatch, "accuracy: logits " + logits.shape().to_string() +
                                                            " and labels " + labels.shape().to_string());
  }
  if (logits.dtype() != DType::kFloat32) {
    throw core::Error(core::ErrorCode::kNotSupported, std::string("accuracy: float32 logits only, not ") +
                                                          core::dtype_name(logits.dtype()));
  }
  if (labels.dtype() != DType::kInt32 && labels.dtype() != DType::kInt64) {
    throw core::Error(core::ErrorCode::kDtypeMismatch,
                      std::string("accuracy: labels must be I32 or I64, not ") + core::dtype_name(labels.dtype()));
  }
  // The arg-max runs on the host: a GPU net's logits and labels come back
  // first (a batch's logits are small next to its activations).
  const core::NDArray host_logits = on_host(logits);
  const core::NDArray host_labels = on_host(labels);
  const int64_t rows = logits.shape()[0];
  const int64_t classes = logits.shape()[1];
  if (labels.dtype() == DType::kInt32) {
    return count_correct_as(host_logits.data_as<float>(), rows, classes, host_labels.data_as<int32_t>());
  }
  return count_correct_as(host_logits.data_as<float>(), rows, classes, host_labels.data_as<int64_t>());
}

EpochRecord EpochMetrics::record(int epoch, double seconds, double compute_seconds, const core::Traffic& moved) const {
  EpochRecord record;
  record.seconds = seconds;
  record.epoch = epoch;
  record.loss = mean_loss();
  record.train_accuracy = accuracy();
  record.images_per_s = static_cast<double>(samples()) / record.seconds;
  record.compute_fraction = compute_seconds / record.seconds;
  record.bytes_sent = moved.bytes_sent;
  record.bytes_received = moved.bytes_received;
  return record;
}

}  // namespace dt::train
