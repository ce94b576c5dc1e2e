// Optimizer: applies one update rule to parameters addressed by integer key,
// as the trainer (locally) and the parameter servers (update_on_kvstore) do.
// Per-key state (momentum, moments, float32 master weights) is created
// lazily on the weight's context at the key's first update, and each key
// counts its own updates; the schedule runs on num_update, the largest count
// over all keys, as in MXNet.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/ndarray.h"
#include "core/safetensors.h"
#include "optim/lr_scheduler.h"
#include "optim/optimizer_config.h"
#include "optim/update_numbers.h"

namespace dt::optim {

class Optimizer {
 public:
  // The numbers one update of one key uses; lr is already scheduled. Public
  // only so that the rules' kernels (free functions) can take it.
  struct Step {
    double lr;
    double wd;
    double rescale_grad;
    double clip_gradient;  // <= 0: no clipping
    int64_t count;         // this key's update number, 1 for its first
  };

  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Validates the config (Error(kInvalidArgument) as OptimizerConfig::validate)
  // and builds the optimizer it names.
  static std::unique_ptr<Optimizer> create(const OptimizerConfig& config);

  const OptimizerConfig& config() const { return config_; }

  // weight -= rule(grad): in place on weight's storage. weight and grad share
  // dtype (float32, float64, float16, bfloat16), shape and device. On a GPU
  // the update is one CUDA kernel queued on the context's stream (float32
  // only; other dtypes there are Error(kNotSupported)); the slots live on the
  // weight's GPU. Error(kNotSupported) for an integer dtype, kDtypeMismatch /
  // kShapeMismatch / kInvalidArgument for mismatched or undefined arrays, kBadState / kShapeMismatch when state
  // loaded for this key does not fit the weight. On error nothing changes.
  // Thread safety: calls for different keys may run concurrently; calls for
  // one key must not overlap (the kvstore serialises per key).
  void update(uint64_t key, const core::NDArray& weight, const core::NDArray& grad);
  // The same with numbers for this update alone: a set field replaces the
  // base rate (still scheduled) or the rescale set last, which stay as they
  // are for later updates. Error(kInvalidArgument) as the setters for a
  // number they would refuse.
  void update(uint64_t key, const core::NDArray& weight, const core::NDArray& grad, const UpdateNumbers& numbers);

  // The base rate, before the schedule (Error(kInvalidArgument) for a
  // negative or non-finite one). With a schedule, the schedule scales the new
  // base from the current update count on.
  void set_learning_rate(double lr);
  // Throws what set_learning_rate / set_rescale_grad throw for a number they
  // refuse (what names the number's source in the message).
  static void check_learning_rate(double lr, const std::string& what);
  static void check_rescale_grad(double rescale, const std::string& what);
  double base_learning_rate() const;
  // The scheduled rate at the current num_update: the rate of the latest
  // update (before any update, the schedule at 0).
  double learning_rate() const;
  // The factor applied to every gradient first (the trainer sets
  // 1/batch_size); Error(kInvalidArgument) unless positive and finite.
  void set_rescale_grad(double rescale);
  double rescale_grad() const;

  int64_t num_update() const;
  // Updates applied to key so far (0 for an unseen key).
  int64_t update_count(uint64_t key) const;

  // The state a resumed run needs to continue exactly, as named arrays for a
  // checkpoint: <prefix>num_update (I64 scalar), <prefix>learning_rate (F64
  // scalar, the base rate), and per key <prefix><key>.step (I64 scalar) plus
  // that optimizer's slots (<prefix><key>.mom; .mean and .var) and, with
  // multi-precision, <prefix><key>.weight32. The arrays are views of the live
  // state: save them before the next update. Keys in ascending order. Not to
  // be called while an update() runs.
  core::NamedArrays state(const std::string& prefix) const;
  // Replaces all state with the arrays whose names start with prefix (others
  // are ignored, so a checkpoint may hold weights beside it). The arrays are
  // copied. Error(kInvalidArgument) naming the entry for an unknown name, a
  // wrong dtype or element count, a key without its step or one of its slots,
  // or a missing num_update / learning_rate; on error the state is unchanged.
  // Not to be called while an update() runs.
  void load_state(const core::NamedArrays& arrays, const std::string& prefix);
  // One key's share of state(), copied, named without the key: "step", its
  // slots ("mom"; "mean", "var") and, with multi-precision, "weight32".
  // Empty for a key never updated. What a server hands another that takes a
  // copy of the part (a new replica).
  core::NamedArrays key_state(uint64_t key) const;
  // Replaces key's state with arrays named as key_state() names them (empty:
  // the key starts afresh, as one never updated) and raises num_update to its
  // count. Error(kInvalidArgument) as load_state; on error nothing changes.
  // Not to be called while an update() of key runs.
  void load_key_state(uint64_t key, const core::NamedArrays& arrays);

 protected:
  // Per-key state: the optimizer's slots, each shaped like the weight with
  // dtype float32 (float64 for float64 weights), and the float32 master copy
  // when the weight is 16-bit and multi_precision is on (undefined otherwise).
  struct KeyState {
    int64_t count = 0;
    std::vector<core::NDArray> slots;
    core::NDArray master;
  };

  // What a config without learning_rate / wd gets; they differ per optimizer.
  struct Defaults {
    double learning_rate;
    double wd;
  };
  // config: validated. slot_names: the state arrays every key holds, in the
  // order apply() gets them (empty for plain SGD).
  Optimizer(const OptimizerConfig& config, const Defaults& defaults, std::vector<std::string> slot_names);

  // One fused pass over weight (and master when defined) with this rule.
  // Arguments are checked already; weight and grad are on one device (a GPU
  // only with float32 weights and so no master copy).
  virtual void apply(const core::NDArray& weight, const core::NDArray& grad, const KeyState& state,
                     const Step& step) const = 0;

 private:
  // One entry of a key's loaded state: slot is "step", "weight32" or a slot
  // name (name: the entry's full name, for errors).
  void read_key_entry(const std::string& name, const std::string& slot, const core::NDArray& array,
                      KeyState& state, bool& has_count) const;
  // A loaded key has its step (at least 1) and every slot; base prefixes the
  // names in errors.
  void check_key_state(const std::string& base, KeyState& state, bool has_count) const;
  // Creates the state of a new key, or checks that loaded state fits weight.
  void prepare_state(uint64_t key, KeyState& state, const core::NDArray& weight) const;

  const OptimizerConfig config_;
  const std::vector<std::string> slot_names_;
  const LrScheduler scheduler_;
  const double wd_;
  const double clip_gradient_;
  const bool multi_precision_;

  mutable std::mutex mutex_;  // guards everything below
  double base_lr_;
  double rescale_grad_;
  int64_t num_update_ = 0;
  // Node-based, so a KeyState stays put while other keys are inserted.
  std::unordered_map<uint64_t, KeyState> states_;
};

}  // namespace dt::optim
