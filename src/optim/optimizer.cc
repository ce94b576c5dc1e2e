#include "optim/optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

#include "core/error.h"
#include "ops/tensor_math.h"
#include "optim/adam.h"
#include "optim/sgd.h"
#include "optim/state_name.h"

namespace dt::optim {

using core::DType;
using core::Error;
using core::ErrorCode;
using core::NDArray;

namespace {

constexpr const char* kStepName = "step";
constexpr const char* kMasterName = "weight32";
constexpr const char* kNumUpdateName = "num_update";
constexpr const char* kLearningRateName = "learning_rate";

bool is_half(DType dtype) { return dtype == DType::kFloat16 || dtype == DType::kBFloat16; }

// Slots hold the compute precision: float64 for float64 weights, float32
// otherwise, so that 16-bit weights never keep moments in 16 bits (the
// squared gradients of Adam underflow float16).
DType slot_dtype(DType weight) { return weight == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32; }

NDArray scalar_i64(const std::shared_ptr<core::Context>& ctx, int64_t value) {
  NDArray out = NDArray::empty(ctx, DType::kInt64, core::Shape());
  out.copy_from_host(&value, sizeof value);
  return out;
}

NDArray scalar_f64(const std::shared_ptr<core::Context>& ctx, double value) {
  NDArray out = NDArray::empty(ctx, DType::kFloat64, core::Shape());
  out.copy_from_host(&value, sizeof value);
  return out;
}

NDArray copy_of(const NDArray& src) {
  NDArray out = NDArray::empty(src.context(), src.dtype(), src.shape());
  out.copy_from(src);
  return out;
}

[[noreturn]] void bad_entry(const std::string& name, const std::string& why) {
  throw Error(ErrorCode::kInvalidArgument, "optimizer state '" + name + "': " + why);
}

template <typename T>
T read_scalar(const std::string& name, const NDArray& array, DType dtype) {
  if (array.dtype() != dtype || array.size() != 1) {
    bad_entry(name, std::string("must be one ") + core::dtype_name(dtype) + " element, not " +
                        core::dtype_name(array.dtype()) + " " + array.shape().to_string());
  }
  T value;
  array.copy_to_host(&value, sizeof value);
  return value;
}

}  // namespace

std::unique_ptr<Optimizer> Optimizer::create(const OptimizerConfig& config) {
  config.validate();
  if (config.name() == "sgd" || config.name() == "nag") return std::make_unique<Sgd>(config);
  return std::make_unique<Adam>(config);
}

Optimizer::Optimizer(const OptimizerConfig& config, const Defaults& defaults, std::vector<std::string> slot_names)
    : config_(config),
      slot_names_(std::move(slot_names)),
      scheduler_(config),
      wd_(config.get_number("wd", defaults.wd)),
      clip_gradient_(config.get_number("clip_gradient", -1.0)),
      multi_precision_(config.get_bool("multi_precision", false)),
      base_lr_(config.get_number("learning_rate", defaults.learning_rate)),
      rescale_grad_(config.get_number("rescale_grad", 1.0)) {}

void Optimizer::check_learning_rate(double lr, const std::string& what) {
  if (!std::isfinite(lr) || lr < 0.0) {
    throw Error(ErrorCode::kInvalidArgument, what + ": learning rate must be finite and >= 0, not " + std::to_string(lr));
  }
}

void Optimizer::check_rescale_grad(double rescale, const std::string& what) {
  if (!std::isfinite(rescale) || rescale <= 0.0) {
    throw Error(ErrorCode::kInvalidArgument,
                what + ": rescale_grad must be finite and > 0, not " + std::to_string(rescale));
  }
}

void Optimizer::set_learning_rate(double lr) {
  check_learning_rate(lr, "optimizer '" + config_.name() + "'");
  std::lock_guard<std::mutex> lock(mutex_);
  base_lr_ = lr;
}

double Optimizer::base_learning_rate() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return base_lr_;
}

double Optimizer::learning_rate() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return scheduler_.rate(num_update_, base_lr_);
}

void Optimizer::set_rescale_grad(double rescale) {
  check_rescale_grad(rescale, "optimizer '" + config_.name() + "'");
  std::lock_guard<std::mutex> lock(mutex_);
  rescale_grad_ = rescale;
}

double Optimizer::rescale_grad() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return rescale_grad_;
}

int64_t Optimizer::num_update() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return num_update_;
}

int64_t Optimizer::update_count(uint64_t key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = states_.find(key);
  return it == states_.end() ? 0 : it->second.count;
}

void Optimizer::prepare_state(uint64_t key, KeyState& state, const NDArray& weight) const {
  const DType want = slot_dtype(weight.dtype());
  const bool want_master = multi_precision_ && is_half(weight.dtype());
  const std::string where = "optimizer '" + config_.name() + "', key " + std::to_string(key);
  if (state.count == 0 && state.slots.empty() && !state.master.defined()) {
    for (size_t i = 0; i < slot_names_.size(); ++i) {
      state.slots.push_back(NDArray::zeros(weight.context(), want, weight.shape()));
    }
    if (want_master) {
      state.master = NDArray::empty(weight.context(), DType::kFloat32, weight.shape());
      ops::cast(state.master, weight);
    }
    return;
  }
  // Loaded state: it must describe this weight.
  const auto check = [&](const NDArray& array, DType dtype, const std::string& name) {
    if (array.shape() != weight.shape()) {
      throw Error(ErrorCode::kShapeMismatch, where + ": state '" + name + "' has shape " + array.shape().to_string() +
                                                 " but the weight has " + weight.shape().to_string());
    }
    if (array.dtype() != dtype) {
      throw Error(ErrorCode::kBadState, where + ": state '" + name + "' is " + core::dtype_name(array.dtype()) +
                                            " but a " + core::dtype_name(weight.dtype()) + " weight needs " +
                                            core::dtype_name(dtype));
    }
    const auto& a = *array.context();
    const auto& w = *weight.context();
    if (!core::same_device(a, w)) {
      throw Error(ErrorCode::kBadState, where + ": state '" + name + "' is on " + a.to_string() +
                                            " but the weight on " + w.to_string());
    }
  };
  for (size_t i = 0; i < slot_names_.size(); ++i) check(state.slots[i], want, slot_names_[i]);
  if (state.master.defined()) {
    if (!want_master) {
      throw Error(ErrorCode::kBadState, where + ": state holds a float32 master copy, but the " +
                                            core::dtype_name(weight.dtype()) + " weight is not updated in " +
                                            "multi-precision");
    }
    check(state.master, DType::kFloat32, kMasterName);
  } else if (want_master) {
    // A checkpoint from a run without multi-precision: start the master from
    // the weight, as a fresh key would.
    NDArray master = NDArray::empty(weight.context(), DType::kFloat32, weight.shape());
    ops::cast(master, weight);
    state.master = master;
  }
}

void Optimizer::update(uint64_t key, const NDArray& weight, const NDArray& grad) {
  update(key, weight, grad, UpdateNumbers{});
}

void Optimizer::update(uint64_t key, const NDArray& weight, const NDArray& grad, const UpdateNumbers& numbers) {
  const std::string& name = config_.name();
  if (numbers.learning_rate) check_learning_rate(*numbers.learning_rate, "optimizer '" + name + "'");
  if (numbers.rescale_grad) check_rescale_grad(*numbers.rescale_grad, "optimizer '" + name + "'");
  if (!weight.defined() || !grad.defined()) {
    throw Error(ErrorCode::kInvalidArgument, "optimizer '" + name + "': update of key " + std::to_string(key) +
                                                 " with an undefined " + (weight.defined() ? "gradient" : "weight"));
  }
  const core::Context& wctx = *weight.context();
  const core::Context& gctx = *grad.context();
  if (!core::same_device(wctx, gctx)) {
    throw Error(ErrorCode::kInvalidArgument, "optimizer '" + name + "': key " + std::to_string(key) +
                                                 " has its weight on " + wctx.to_string() + " but its gradient on " +
                                                 gctx.to_string());
  }
  if (grad.dtype() != weight.dtype()) {
    throw Error(ErrorCode::kDtypeMismatch, "optimizer '" + name + "': key " + std::to_string(key) + " has a " +
                                               core::dtype_name(weight.dtype()) + " weight but a " +
                                               core::dtype_name(grad.dtype()) + " gradient");
  }
  if (grad.shape() != weight.shape()) {
    throw Error(ErrorCode::kShapeMismatch, "optimizer '" + name + "': key " + std::to_string(key) +
                                               " has weight shape " + weight.shape().to_string() +
                                               " but gradient shape " + grad.shape().to_string());
  }
  if (!core::is_floating(weight.dtype())) {
    throw Error(ErrorCode::kNotSupported, "optimizer '" + name + "': cannot update " +
                                              core::dtype_name(weight.dtype()) + " weights (floating dtypes only)");
  }
  // The GPU kernels (optim/cuda/optimizer_kernels.h) are float32 only:
  // 16-bit weights with float32 master copies (mixed precision) and float64
  // are CPU-only for now.
  if (!wctx.is_cpu() && weight.dtype() != DType::kFloat32) {
    throw Error(ErrorCode::kNotSupported, "optimizer '" + name + "': updates on " + wctx.to_string() +
                                              " take float32 weights only, not " + core::dtype_name(weight.dtype()) +
                                              " (mixed precision on the GPU is not built)");
  }

  const KeyState* state = nullptr;
  Step step{};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // On any throw below, a key created here is removed again so that a
    // failed update leaves no trace.
    const auto [it, inserted] = states_.try_emplace(key);
    try {
      prepare_state(key, it->second, weight);
    } catch (...) {
      if (inserted) states_.erase(it);
      throw;
    }
    KeyState& ks = it->second;
    ks.count += 1;
    num_update_ = std::max(num_update_, ks.count);
    step = Step{scheduler_.rate(num_update_, numbers.learning_rate.value_or(base_lr_)), wd_,
                numbers.rescale_grad.value_or(rescale_grad_), clip_gradient_, ks.count};
    state = &ks;
  }
  apply(weight, grad, *state, step);
}

core::NamedArrays Optimizer::state(const std::string& prefix) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto cpu = core::make_cpu_context();
  core::NamedArrays out;
  out.emplace_back(prefix + kNumUpdateName, scalar_i64(cpu, num_update_));
  out.emplace_back(prefix + kLearningRateName, scalar_f64(cpu, base_lr_));
  std::vector<uint64_t> keys;
  keys.reserve(states_.size());
  for (const auto& entry : states_) keys.push_back(entry.first);
  std::sort(keys.begin(), keys.end());
  for (uint64_t key : keys) {
    const KeyState& ks = states_.at(key);
    const std::string base = prefix + std::to_string(key) + ".";
    out.emplace_back(base + kStepName, scalar_i64(cpu, ks.count));
    for (size_t i = 0; i < ks.slots.size(); ++i) out.emplace_back(base + slot_names_[i], ks.slots[i]);
    if (ks.master.defined()) out.emplace_back(base + kMasterName, ks.master);
  }
  return out;
}

void Optimizer::load_state(const core::NamedArrays& arrays, const std::string& prefix) {
  struct Loaded {
    bool has_count = false;
    KeyState state;
  };
  std::map<uint64_t, Loaded> loaded;
  bool has_num_update = false;
  bool has_lr = false;
  int64_t num_update = 0;
  double lr = 0.0;

  for (const auto& [name, array] : arrays) {
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    if (!array.defined()) bad_entry(name, "undefined array");
    const std::string rest = name.substr(prefix.size());
    if (rest == kNumUpdateName) {
      num_update = read_scalar<int64_t>(name, array, DType::kInt64);
      if (num_update < 0) bad_entry(name, "negative update count");
      has_num_update = true;
      continue;
    }
    if (rest == kLearningRateName) {
      lr = read_scalar<double>(name, array, DType::kFloat64);
      if (!std::isfinite(lr) || lr < 0.0) bad_entry(name, "learning rate must be finite and >= 0");
      has_lr = true;
      continue;
    }
    bool key_too_large = false;
    const auto parsed = parse_state_name(rest, &key_too_large);
    if (key_too_large) bad_entry(name, "key does not fit in 64 bits");
    if (!parsed || parsed->per_part) bad_entry(name, "expected <key>.<slot>, num_update or learning_rate after the prefix");
    Loaded& entry = loaded[parsed->key];
    read_key_entry(name, parsed->slot, array, entry.state, entry.has_count);
  }

  if (!has_num_update) bad_entry(prefix + kNumUpdateName, "missing");
  if (!has_lr) bad_entry(prefix + kLearningRateName, "missing");
  std::unordered_map<uint64_t, KeyState> states;
  for (auto& [key, entry] : loaded) {
    check_key_state(prefix + std::to_string(key) + ".", entry.state, entry.has_count);
    states.emplace(key, std::move(entry.state));
  }

  std::lock_guard<std::mutex> lock(mutex_);
  states_ = std::move(states);
  num_update_ = num_update;
  base_lr_ = lr;
}

void Optimizer::read_key_entry(const std::string& name, const std::string& slot, const NDArray& array,
                               KeyState& state, bool& has_count) const {
  if (!array.defined()) bad_entry(name, "undefined array");
  if (slot == kStepName) {
    state.count = read_scalar<int64_t>(name, array, DType::kInt64);
    if (state.count < 0) bad_entry(name, "negative update count");
    has_count = true;
  } else if (slot == kMasterName) {
    if (array.dtype() != DType::kFloat32) bad_entry(name, "master weights must be F32");
    state.master = copy_of(array);
  } else {
    const auto it = std::find(slot_names_.begin(), slot_names_.end(), slot);
    if (it == slot_names_.end()) bad_entry(name, "optimizer '" + config_.name() + "' has no state '" + slot + "'");
    if (array.dtype() != DType::kFloat32 && array.dtype() != DType::kFloat64) {
      bad_entry(name, "must be F32 or F64, not " + std::string(core::dtype_name(array.dtype())));
    }
    state.slots.resize(slot_names_.size());
    state.slots[static_cast<size_t>(it - slot_names_.begin())] = copy_of(array);
  }
}

void Optimizer::check_key_state(const std::string& base, KeyState& state, bool has_count) const {
  if (!has_count) bad_entry(base + kStepName, "missing");
  state.slots.resize(slot_names_.size());
  for (size_t i = 0; i < slot_names_.size(); ++i) {
    if (!state.slots[i].defined()) bad_entry(base + slot_names_[i], "missing");
  }
  if (state.count == 0) bad_entry(base + kStepName, "a key with state has at least one update");
}

core::NamedArrays Optimizer::key_state(uint64_t key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  core::NamedArrays out;
  const auto it = states_.find(key);
  if (it == states_.end()) return out;
  const KeyState& ks = it->second;
  out.emplace_back(kStepName, scalar_i64(core::make_cpu_context(), ks.count));
  for (size_t i = 0; i < ks.slots.size(); ++i) out.emplace_back(slot_names_[i], copy_of(ks.slots[i]));
  if (ks.master.defined()) out.emplace_back(kMasterName, copy_of(ks.master));
  return out;
}

void Optimizer::load_key_state(uint64_t key, const core::NamedArrays& arrays) {
  KeyState state;
  bool has_count = false;
  for (const auto& [name, array] : arrays) read_key_entry(name, name, array, state, has_count);
  if (!arrays.empty()) check_key_state("", state, has_count);
  std::lock_guard<std::mutex> lock(mutex_);
  if (arrays.empty()) {
    states_.erase(key);
    return;
  }
  num_update_ = std::max(num_update_, state.count);
  states_[key] = std::move(state);
}

}  // namespace dt::optim
