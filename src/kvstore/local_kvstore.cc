#include "kvstore/local_kvstore.h"

#include <set>
#include <string>

#include "core/error.h"
#include "kvstore/argument_checks.h"

namespace dt::kvstore {

using core::Error;
using core::ErrorCode;
using core::NDArray;

LocalKVStore::LocalKVStore(Reduce reduce, const ops::cpu::ReductionSettings& reduction) : reduce_(reduce) {
  if (reduce == Reduce::kOnCpu) {
    cpu_sums_ = std::make_unique<ops::cpu::ReductionPool>(reduction);
    reducer_ = std::make_unique<KeyReducer>(core::make_cpu_context(), cpu_sums_.get());
    return;
  }
  if (reduce == Reduce::kNccl && !DT_WITH_NCCL) {
    throw Error(ErrorCode::kNotSupported,
                "kvstore 'nccl': this build of disttrain was built without NCCL; use 'device' or 'local'");
  }
  reducer_ = std::make_unique<KeyReducer>(gpu_for_kvstore(type(), 0, "local"));
}

std::string LocalKVStore::type() const {
  switch (reduce_) {
    case Reduce::kOnCpu: return "local";
    case Reduce::kOnGpu: return "device";
    case Reduce::kNccl: return "nccl";
  }
  return "local";
}

namespace {

void check_stored(Key key, const NDArray& expected, const NDArray& value, const char* op) {
  check_value(key, expected.dtype(), expected.shape(), value, op);
}

}  // namespace

LocalKVStore::Entry& LocalKVStore::entry(Key key, const char* op) {
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    throw Error(ErrorCode::kNotFound, std::string(op) + ": key " + std::to_string(key) + " has not been initialised");
  }
  return it->second;
}

void LocalKVStore::check_init(const std::vector<Key>& keys, const std::vector<NDArray>& values) const {
  kvstore::check_init(keys, values, [this](Key key) { return entries_.count(key) > 0; });
}

void LocalKVStore::apply_init(const std::vector<Key>& keys, const std::vector<NDArray>& values) {
  for (size_t i = 0; i < keys.size(); ++i) {
    Entry e;
    e.stored = NDArray::empty(reducer_->merge_context(), values[i].dtype(), values[i].shape());
    e.stored.copy_from(values[i]);
    e.reducer = reducer_.get();
    // Only "device" chooses a merge GPU per key.
    e.placed = reduce_ != Reduce::kOnGpu;
    entries_.emplace(keys[i], std::move(e));
  }
}

KeyReducer& LocalKVStore::reducer_on_gpu(int device) {
  if (device == reducer_->merge_context()->device_id()) return *reducer_;
  std::unique_ptr<KeyReducer>& r = gpu_reducers_[device];
  if (!r) r = std::make_unique<KeyReducer>(gpu_for_kvstore(type(), device, "local"));
  return *r;
}

void LocalKVStore::place_keys(const std::vector<Key>& keys, const std::vector<NDArray>& values) {
  std::vector<MergeGpuPlacement::Request> requests;
  for (const KeyGroup& group : group_keys(keys)) {
    Entry& e = entries_.at(group.key);
    if (e.placed) continue;
    e.placed = true;
    std::set<int> gpus;
    for (size_t p : group.positions) {
      if (!values[p].context()->is_cpu()) gpus.insert(values[p].context()->device_id());
    }
    const size_t bytes = e.stored.nbytes();
    // Values only on the CPU leave the key where it is; so does optimizer
    // state (loaded from a checkpoint), which lives beside the weight.
    if (gpus.empty() || (optimizer_ && optimizer_->update_count(group.key) > 0)) {
      placement_.add_load(e.stored.context()->device_id(), bytes);
      continue;
    }
    requests.push_back({group.key, bytes, std::vector<int>(gpus.begin(), gpus.end())});
  }
  const std::vector<int> chosen = placement_.place(requests);
  for (size_t i = 0; i < requests.size(); ++i) {
    Entry& e = entries_.at(requests[i].key);
    KeyReducer& reducer = reducer_on_gpu(chosen[i]);
    if (!core::same_device(*e.stored.context(), *reducer.merge_context())) {
      NDArray moved = NDArray::empty(reducer.merge_context(), e.stored.dtype(), e.stored.shape());
      moved.copy_from(e.stored);
      e.stored = moved;
      e.merged = NDArray();
      e.staging = NDArray();
    }
    e.reducer = &reducer;
  }
}

void LocalKVStore::check_push(const std::vector<Key>& keys, const std::vector<NDArray>& values) {
  check_lengths(keys.size(), values.size(), "push", "values");
  for (size_t i = 0; i < keys.size(); ++i) check_stored(keys[i], entry(keys[i], "push").stored, values[i], "push");
}

void LocalKVStore::check_pull(const std::vector<Key>& keys, const std::vector<NDArray>& outs) {
  check_lengths(keys.size(), outs.size(), "pull", "outputs");
  for (size_t i = 0; i < keys.size(); ++i) check_stored(keys[i], entry(keys[i], "pull").stored, outs[i], "pull");
}

void LocalKVStore::apply_push(const std::vector<Key>& keys, const std::vector<NDArray>& values) {
  place_keys(keys, values);
  for (const KeyGroup& group : group_keys(keys)) {
    Entry& e = entries_.at(group.key);
    if (!optimizer_) {
      e.reducer->sum(values, group.positions, e.stored, e.staging);
      continue;
    }
    if (!e.merged.defined()) e.merged = NDArray::empty(e.reducer->merge_context(), e.stored.dtype(), e.stored.shape());
    e.reducer->sum(values, group.positions, e.merged, e.staging);
    optimizer_->update(group.key, e.stored, e.merged);
  }
}

void LocalKVStore::apply_pull(const std::vector<Key>& keys, const std::vector<NDArray>& outs) {
  for (const KeyGroup& group : group_keys(keys)) {
    const Entry& e = entries_.at(group.key);
    e.reducer->broadcast(e.stored, outs, group.positions);
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
    for (size_t pos : groups[g].positions) check_stored(groups[g].key, first_values[g], outs[pos], "broadcast");
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

std::shared_ptr<core::Context> LocalKVStore::merge_context_of(Key key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = entries_.find(key);
  if (it == entries_.end()) {
    throw Error(ErrorCode::kNotFound, "merge_context_of: key " + std::to_string(key) + " has not been initialised");
  }
  return it->second.reducer->merge_context();
}

void LocalKVStore::load_optimizer_state(const core::NamedArrays& arrays, const std::string& prefix) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!optimizer_) throw Error(ErrorCode::kBadState, "load_optimizer_state: the kvstore has no optimizer");
  optimizer_->load_state(arrays, prefix);
}

}  // namespace dt::kvstore
