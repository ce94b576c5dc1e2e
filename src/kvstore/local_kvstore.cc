#include "kvstore/local_kvstore.h"

#include <string>

#include "core/error.h"
#include "ops/tensor_math.h"

namespace dt::kvstore {

using core::Error;
using core::ErrorCode;
using core::NDArray;

namespace {

bool same_device(const core::Context& a, const core::Context& b) {
  return a.type() == b.type() && a.device_id() == b.device_id();
}

void check_lengths(size_t keys, size_t values, const char* op, const char* what) {
  if (keys != values) {
    throw Error(ErrorCode::kInvalidArgument, std::string(op) + ": " + std::to_string(keys) + " keys but " +
                                                 std::to_string(values) + " " + what);
  }
}

}  // namespace

LocalKVStore::LocalKVStore(Reduce reduce) : reduce_(reduce) {
  if (reduce == Reduce::kOnCpu) {
    merge_context_ = core::make_cpu_context();
    return;
  }
  if (reduce == Reduce::kNccl && !DT_WITH_NCCL) {
    throw Error(ErrorCode::kNotSupported,
                "kvstore 'nccl': this build of disttrain was built without NCCL; use 'device' or 'local'");
  }
  if (core::gpu_count() == 0) {
    // make_context says whether CUDA is missing from the build or the GPU from the machine.
    try {
      core::make_context(static_cast<int>(core::DeviceType::kGpu), 0);
    } catch (const Error& e) {
      throw Error(e.code(), "kvstore '" + type() + "' reduces on a GPU: " + e.what() + "; use 'local'");
    }
  }
  merge_context_ = core::make_context(static_cast<int>(core::DeviceType::kGpu), 0);
  group_reducer_ = make_gpu_group_reducer(merge_context_);
}

std::string LocalKVStore::type() const {
  switch (reduce_) {
    case Reduce::kOnCpu: return "local";
    case Reduce::kOnGpu: return "device";
    case Reduce::kNccl: return "nccl";
  }
  return "local";
}

LocalKVStore::Entry& LocalKVStore::entry(Key key, const char* op) {
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    throw Error(ErrorCode::kNotFound, std::string(op) + ": key " + std::to_string(key) + " has not been initialised");
  }
  return it->second;
}

void LocalKVStore::check_value(Key key, const NDArray& expected, const NDArray& value, const char* op) const {
  if (!value.defined()) throw Error(ErrorCode::kInvalidArgument, std::string(op) + ": an array for key " +
                                                                      std::to_string(key) + " is empty");
  if (value.dtype() != expected.dtype()) {
    throw Error(ErrorCode::kDtypeMismatch, std::string(op) + ": key " + std::to_string(key) + " holds " +
                                               core::dtype_name(expected.dtype()) + ", got " +
                                               core::dtype_name(value.dtype()));
  }
  if (value.shape() != expected.shape()) {
    throw Error(ErrorCode::kShapeMismatch, std::string(op) + ": key " + std::to_string(key) + " was initialised as " +
                                               expected.shape().to_string() + ", got " + value.shape().to_string());
  }
}

void LocalKVStore::check_init(const std::vector<Key>& keys, const std::vector<NDArray>& values) const {
  check_lengths(keys.size(), values.size(), "init", "values");
  for (size_t i = 0; i < keys.size(); ++i) {
    if (entries_.count(keys[i]) > 0) {
      throw Error(ErrorCode::kBadState, "init: key " + std::to_string(keys[i]) + " is already initialised");
    }
    if (!values[i].defined()) throw Error(ErrorCode::kInvalidArgument, "init: value " + std::to_string(i) + " is empty");
    for (size_t j = 0; j < i; ++j) {
      if (keys[j] == keys[i]) throw Error(ErrorCode::kInvalidArgument, "init: key " + std::to_string(keys[i]) + " repeats");
    }
  }
}

void LocalKVStore::apply_init(const std::vector<Key>& keys, const std::vector<NDArray>& values) {
  for (size_t i = 0; i < keys.size(); ++i) {
    Entry e;
    e.stored = NDArray::empty(merge_context_, values[i].dtype(), values[i].shape());
    e.stored.copy_from(values[i]);
    entries_.emplace(keys[i], std::move(e));
  }
}

void LocalKVStore::check_push(const std::vector<Key>& keys, const std::vector<NDArray>& values) {
  check_lengths(keys.size(), values.size(), "push", "values");
  for (size_t i = 0; i < keys.size(); ++i) check_value(keys[i], entry(keys[i], "push").stored, values[i], "push");
}

void LocalKVStore::check_pull(const std::vector<Key>& keys, const std::vector<NDArray>& outs) {
  check_lengths(keys.size(), outs.size(), "pull", "outputs");
  for (size_t i = 0; i < keys.size(); ++i) check_value(keys[i], entry(keys[i], "pull").stored, outs[i], "pull");
}

void LocalKVStore::sum_into(Entry& e, const std::vector<NDArray>& values, const std::vector<size_t>& positions,
                            const NDArray& dst) {
  if (group_reducer_ && group_reducer_->sum(values, positions, dst)) return;
  dst.copy_from(values[positions.front()]);
  for (size_t k = 1; k < positions.size(); ++k) {
    const NDArray& value = values[positions[k]];
    if (same_device(*value.context(), *merge_context_)) {
      ops::add(dst, dst, value);
      continue;
    }
    if (!e.staging.defined()) e.staging = NDArray::empty(merge_context_, dst.dtype(), dst.shape());
    e.staging.copy_from(value);
    ops::add(dst, dst, e.staging);
  }
}

void LocalKVStore::apply_push(const std::vector<Key>& keys, const std::vector<NDArray>& values) {
  for (const KeyGroup& group : group_keys(keys)) {
    Entry& e = entries_.at(group.key);
    if (!optimizer_) {
      sum_into(e, values, group.positions, e.stored);
      continue;
    }
    if (!e.merged.defined()) e.merged = NDArray::empty(merge_context_, e.stored.dtype(), e.stored.shape());
    sum_into(e, values, group.positions, e.merged);
    optimizer_->update(group.key, e.stored, e.merged);
  }
}

void LocalKVStore::apply_pull(const std::vector<Key>& keys, const std::vector<NDArray>& outs) {
  for (const KeyGroup& group : group_keys(keys)) {
    const NDArray& stored = entries_.at(group.key).stored;
    if (group_reducer_ && group_reducer_->broadcast(stored, outs, group.positions)) continue;
    for (size_t p : group.positions) outs[p].copy_from(stored);
  }
}

void LocalKVStore::init(const std::vector<Key>& keys, const std::vector<NDArray>& values) {
  std::lock_guard<std::mutex> lock(mutex_);
  check_init(keys, values);
  apply_init(keys, values);
}

void LocalKVStore::push(const std::vector<Key>& keys, const std::vector<NDArray>& values, int) {
  std::lock_guard<std::mutex> lock(mutex_);
  check_push(keys, values);
  apply_push(keys, values);
}

void LocalKVStore::pull(const std::vector<Key>& keys, const std::vector<NDArray>& outs, int) {
  std::lock_guard<std::mutex> lock(mutex_);
  check_pull(keys, outs);
  apply_pull(keys, outs);
}

void LocalKVStore::pushpull(const std::vector<Key>& keys, const std::vector<NDArray>& values,
                            const std::vector<NDArray>& outs, int) {
  std::lock_guard<std::mutex> lock(mutex_);
  check_push(keys, values);
  check_pull(keys, outs);
  apply_push(keys, values);
  apply_pull(keys, outs);
}

void LocalKVStore::broadcast(const std::vector<Key>& keys, const std::vector<NDArray>& values,
                             const std::vector<NDArray>& outs) {
  check_lengths(keys.size(), values.size(), "broadcast", "values");
  check_lengths(keys.size(), outs.size(), "broadcast", "outputs");
  // Each key starts from its first value, as MXNet's broadcast does.
  std::vector<Key> first_keys;
  std::vector<NDArray> first_values;
  const auto groups = group_keys(keys);
  for (const KeyGroup& group : groups) {
    first_keys.push_back(group.key);
    first_values.push_back(values[group.positions.front()]);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  check_init(first_keys, first_values);
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t pos : groups[g].positions) check_value(groups[g].key, first_values[g], outs[pos], "broadcast");
  }
  apply_init(first_keys, first_values);
  apply_pull(keys, outs);
}

void LocalKVStore::set_optimizer(const optim::OptimizerConfig& config) {
  auto optimizer = optim::Optimizer::create(config);
  std::lock_guard<std::mutex> lock(mutex_);
  optimizer_ = std::move(optimizer);
}

bool LocalKVStore::has_optimizer() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return optimizer_ != nullptr;
}

void LocalKVStore::set_learning_rate(double lr) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!optimizer_) throw Error(ErrorCode::kBadState, "set_learning_rate: the kvstore has no optimizer");
  optimizer_->set_learning_rate(lr);
}

void LocalKVStore::set_rescale_grad(double rescale) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!optimizer_) throw Error(ErrorCode::kBadState, "set_rescale_grad: the kvstore has no optimizer");
  optimizer_->set_rescale_grad(rescale);
}

core::NamedArrays LocalKVStore::optimizer_state(const std::string& prefix) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return optimizer_ ? optimizer_->state(prefix) : core::NamedArrays{};
}

void LocalKVStore::load_optimizer_state(const core::NamedArrays& arrays, const std::string& prefix) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!optimizer_) throw Error(ErrorCode::kBadState, "load_optimizer_state: the kvstore has no optimizer");
  optimizer_->load_state(arrays, prefix);
}

}  // namespace dt::kvstore
