// The in-process kvstore types: "local" sums on the CPU, "device" on a GPU,
// "nccl" on GPUs through NCCL. All keep one stored value per key; pushes are
// reduced in the order the values are listed, so results do not depend on
// timing. "device" and "nccl" reduce a key whose values live on several GPUs
// with one NCCL reduce to the merge GPU and fill its pull outputs with one
// NCCL broadcast (MXNet's KVStoreNCCL), and sum on the merge GPU otherwise;
// "device" falls back to peer copies in a build without NCCL, "nccl" is not
// available there. "device" spreads its keys over the GPUs their values live
// on (MXNet's CommDevice, kvstore/merge_gpu_placement.h): each key is summed,
// updated and stored on its own merge GPU, chosen at its first push; "nccl"
// roots every key on gpu(0), as MXNet's KVStoreNCCL does.
#pragma once

#include <map>
#include <memory>
#include <mutex>

#include "core/context.h"
#include "kvstore/key_reducer.h"
#include "kvstore/kvstore.h"
#include "kvstore/merge_gpu_placement.h"
#include "ops/cpu/reduction_pool.h"
#include "optim/optimizer.h"

namespace dt::kvstore {

class LocalKVStore final : public KVStore {
 public:
  enum class Reduce { kOnCpu, kOnGpu, kNccl };
  // kOnGpu and kNccl without a visible GPU are Error(kNoDevice) (or
  // kNotSupported in a build without CUDA): "device" never silently reduces
  // on the CPU. kNccl in a build without NCCL is Error(kNotSupported).
  // reduction: the threads that sum a "local" store's large keys on the
  // CPU (MXNET_KVSTORE_REDUCTION_NTHREADS; ops/cpu/reduction_pool.h).
  explicit LocalKVStore(Reduce reduce, const ops::cpu::ReductionSettings& reduction = {});

  std::string type() const override;
  void init(const std::vector<Key>& keys, const std::vector<core::NDArray>& values) override;
  void push(const std::vector<Key>& keys, const std::vector<core::NDArray>& values, int priority) override;
  void pull(const std::vector<Key>& keys, const std::vector<core::NDArray>& outs, int priority) override;
  // Both check every value and output before changing anything, so a call
  // that fails leaves the store as it was (a retry never applies twice).
  void pushpull(const std::vector<Key>& keys, const std::vector<core::NDArray>& values,
                const std::vector<core::NDArray>& outs, int priority) override;
  void broadcast(const std::vector<Key>& keys, const std::vector<core::NDArray>& values,
                 const std::vector<core::NDArray>& outs) override;
  void set_optimizer(const optim::OptimizerConfig& config) override;
  bool has_optimizer() const override;
  void set_learning_rate(double lr) override;
  void set_rescale_grad(double rescale) override;
  core::NamedArrays optimizer_state(const std::string& prefix) const override;
  void load_optimizer_state(const core::NamedArrays& arrays, const std::string& prefix) override;

  // The context key is stored and summed on (for tests and diagnostics);
  // Error(kNotFound) for a key not initialised.
  std::shared_ptr<core::Context> merge_context_of(Key key) const;

 private:
  struct Entry {
    core::NDArray stored;  // the weight (or, without an optimizer, the last sum)
    core::NDArray merged;  // reused buffer for the sum of one push
    core::NDArray staging; // reused buffer for a value from another device
    KeyReducer* reducer = nullptr;  // the one on stored's context
    bool placed = false;            // "device": merge GPU chosen (first push)
  };
  // The unlocked halves of each operation; callers hold mutex_.
  Entry& entry(Key key, const char* op);
  void check_init(const std::vector<Key>& keys, const std::vector<core::NDArray>& values) const;
  void apply_init(const std::vector<Key>& keys, const std::vector<core::NDArray>& values);
  void check_push(const std::vector<Key>& keys, const std::vector<core::NDArray>& values);
  void apply_push(const std::vector<Key>& keys, const std::vector<core::NDArray>& values);
  void check_pull(const std::vector<Key>& keys, const std::vector<core::NDArray>& outs);
  void apply_pull(const std::vector<Key>& keys, const std::vector<core::NDArray>& outs);
  // "device": moves the keys of this push that have no merge GPU yet to the
  // one MergeGpuPlacement picks among the GPUs of their values.
  void place_keys(const std::vector<Key>& keys, const std::vector<core::NDArray>& values);
  KeyReducer& reducer_on_gpu(int device);

  const Reduce reduce_;
  // kOnCpu: reducer_'s summing threads; before it, which sums on them.
  std::unique_ptr<ops::cpu::ReductionPool> cpu_sums_;
  // On the CPU (kOnCpu) or gpu(0): where keys live until placed; used
  // under mutex_.
  std::unique_ptr<KeyReducer> reducer_;
  // "device": one reducer per merge GPU other than reducer_'s.
  std::map<int, std::unique_ptr<KeyReducer>> gpu_reducers_;
  MergeGpuPlacement placement_;
  mutable std::mutex mutex_;
  std::map<Key, Entry> entries_;
  std::unique_ptr<optim::Optimizer> optimizer_;
};

}  // namespace dt::kvstore
