#include "train/metrics_log.h"

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace dt::train {

MetricsLog::MetricsLog(const std::string& path, bool append)
    : path_(path), file_(std::fopen(path.c_str(), append ? "a" : "w"), &std::fclose) {
  if (!file_) {
    throw core::Error(core::ErrorCode::kIo, "cannot open metrics log " + path + ": " + std::strerror(errno));
  }
}

void MetricsLog::write(const EpochRecord& record) {
  nlohmann::ordered_json line = {{"epoch", record.epoch},
                                 {"loss", record.loss},
                                 {"train_accuracy", record.train_accuracy}};
  if (record.test_accuracy >= 0) line["test_accuracy"] = record.test_accuracy;
  line["images_per_s"] = record.images_per_s;
  line["seconds"] = record.seconds;
  line["compute_fraction"] = record.compute_fraction;
  line["bytes_sent"] = record.bytes_sent;
  line["bytes_received"] = record.bytes_received;
  const std::string text = line.dump() + "\n";
  if (std::fwrite(text.data(), 1, text.size(), file_.get()) != text.size() || std::fflush(file_.get()) != 0) {
    throw core::Error(core::ErrorCode::kIo, "writing metrics log " + path_ + ": " + std::strerror(errno));
  }
}

}  // namespace dt::train
