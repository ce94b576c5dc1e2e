#include "kvstore/kvstore.h"

#include <unordered_map>

#include "core/error.h"
#include "ps/compression/compression_mode.h"

namespace dt::kvstore {

using core::Error;
using core::ErrorCode;

void KVStore::pushpull(const std::vector<Key>& keys, const std::vector<core::NDArray>& values,
                       const std::vector<core::NDArray>& outs, int priority) {
  push(keys, values, priority);
  pull(keys, outs, priority);
}

void KVStore::set_gradient_compression(const std::string& spec) {
  throw Error(ErrorCode::kNotSupported, "set_gradient_compression('" + spec + "'): kvstore '" + type() +
                                            "' sends nothing between processes to compress; the parameter-server "
                                            "types (dist_sync, dist_async and their _device forms) compress");
}

void KVStore::set_compression_rescale_grad(double rescale_grad) {
  using ps::compression::CompressionConfig;
  const double scale = CompressionConfig::batch_sum_gradient_scale(rescale_grad);
  const CompressionConfig config = CompressionConfig::parse(gradient_compression());
  const CompressionConfig scaled = config.with_gradient_scale(scale);
  if (scaled != config) set_gradient_compression(scaled.to_string());
}

namespace {

std::shared_ptr<Completion> finished() {
  auto done = std::make_shared<Completion>();
  done->finish();
  return done;
}

}  // namespace

std::shared_ptr<Completion> KVStore::push_async(const std::vector<Key>& keys, const std::vector<core::NDArray>& values,
                                                int priority) {
  push(keys, values, priority);
  return finished();
}

std::shared_ptr<Completion> KVStore::pull_async(const std::vector<Key>& keys, const std::vector<core::NDArray>& outs,
                                                int priority) {
  pull(keys, outs, priority);
  return finished();
}

std::shared_ptr<Completion> KVStore::pushpull_async(const std::vector<Key>& keys,
                                                    const std::vector<core::NDArray>& values,
                                                    const std::vector<core::NDArray>& outs, int priority) {
  pushpull(keys, values, outs, priority);
  return finished();
}

void KVStore::wait(const std::shared_ptr<Completion>& request) {
  if (!request) throw Error(ErrorCode::kInvalidArgument, "wait: no request");
  if (auto error = request->error()) throw *error;
}

void KVStore::broadcast(const std::vector<Key>& keys, const std::vector<core::NDArray>& values,
                        const std::vector<core::NDArray>& outs) {
  // MXNet's broadcast initialises each key from its first value only.
  std::vector<Key> first_keys;
  std::vector<core::NDArray> first_values;
  if (keys.size() != values.size()) {
    throw Error(ErrorCode::kInvalidArgument, "broadcast: " + std::to_string(keys.size()) + " keys and " +
                                                 std::to_string(values.size()) + " values");
  }
  for (const KeyGroup& group : group_keys(keys)) {
    first_keys.push_back(group.key);
    first_values.push_back(values[group.positions.front()]);
  }
  init(first_keys, first_values);
  pull(keys, outs, 0);
}

std::vector<KeyGroup> group_keys(const std::vector<Key>& keys) {
  std::vector<KeyGroup> groups;
  std::unordered_map<Key, size_t> index;
  for (size_t i = 0; i < keys.size(); ++i) {
    auto [it, inserted] = index.emplace(keys[i], groups.size());
    if (inserted) groups.push_back(KeyGroup{keys[i], {}});
    groups[it->second].positions.push_back(i);
  }
  return groups;
}

}  // namespace dt::kvstore
