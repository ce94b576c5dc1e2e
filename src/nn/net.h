// Net: a directed acyclic graph of layers built from a NetDescription, with
// its parameters, forward, backward through the loss, and parameter files.
//
// Values are the graph inputs and the layer outputs. Layers run in a
// topological order computed once at construction (the description's own
// order wherever it already is one). Parameters are created then too, by
// shape inference with batch 1: a layer's parameter shapes depend only on
// per-sample dims. Activation and gradient buffers are kept per batch size
// (a few sizes at once: the training batch, the epoch's short last batch,
// evaluation), so steps with a shape already seen allocate nothing.
//
// Mixed precision (a GPU net's compute dtype float16 or bfloat16, set
// before the first forward): parameters stay float32 (the masters that
// optimizers, kvstores and checkpoints see), and the net keeps copies of the
// weights in the compute dtype (compute_parameters.h), cast from the masters
// at every forward, so writes to the masters from anywhere are seen. Inputs are cast to the compute dtype, every layer runs in it, the
// logits are cast back to float32 for the loss and output(), the loss
// gradient is multiplied by the loss scale (loss_scaler(); dynamic for
// float16, off for bfloat16, as PyTorch's AMP), and each parameter gradient
// is cast into its float32 gradient array with the scale taken out. So
// backward's gradients are the true float32 ones either way; with loss
// scaling they may hold inf/NaN, which gradients_finite() tells, and a
// trainer then skips the update and records it in the scaler.
//
// A Net is used from one thread at a time (its CPU stream and buffers are
// not shared-safe); different nets may run on different threads.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/dtype.h"
#include "core/ndarray.h"
#include "nn/layer.h"
#include "nn/loss_scaler.h"
#include "nn/mixed_precision_policy.h"
#include "nn/net_description.h"
#include "nn/parameter.h"

namespace dt::nn {

class ComputeParameters;

namespace layers {
class SoftmaxCrossEntropyLoss;
}  // namespace layers

class Net {
 public:
  // Builds the graph and allocates every parameter and gradient (zeros) on
  // ctx, with a CPU engine of ctx->num_threads() threads. Errors
  // (kInvalidArgument) name the culprit: duplicate names, an unknown input, a
  // cycle, an output that is no layer, a layer that does not lead to the
  // output, a graph input nobody reads, a wrong number of inputs;
  // create_layer() and the layers' shape inference report theirs. On a GPU
  // context every layer runs its GPU kernel; a layer that has none (Conv2D
  // in a build without cuDNN) fails its forward with Error(kNotSupported)
  // naming the layer. With DT_CONV_LAYOUT=NHWC the net's 4-d part runs
  // channels-last (nn/net_layout.h): description() is then the rewritten
  // one, with the same parameters.
  Net(NetDescription description, std::shared_ptr<core::Context> ctx);
  ~Net();
  Net(const Net&) = delete;
  Net& operator=(const Net&) = delete;

  // The description with explicit inputs and each layer's own complete
  // attributes, so that a net built from it is the same net.
  const NetDescription& description() const { return description_; }
  std::string to_json() const { return net_description_to_text(description_); }
  const std::shared_ptr<core::Context>& context() const { return ctx_; }
  // Complete only where ops/cpu/cpu_engine.h is included: net.h keeps oneDNN
  // out of what includes it.
  const ops::cpu::CpuEngine& engine() const { return *engine_; }

  // Layer names in execution order.
  std::vector<std::string> topological_order() const;

  // Fills every parameter by its initializer from (seed, name), and seeds
  // stochastic layers (Dropout) with seed. The values are drawn on the host
  // whatever the context, so a GPU net starts from a CPU net's weights.
  void initialize(uint64_t seed);

  // In layer order (the description's), each layer's in param_specs() order.
  std::vector<Parameter>& parameters() { return params_; }
  const std::vector<Parameter>& parameters() const { return params_; }
  // Index of the parameter called name; Error(kNotFound) naming it.
  size_t param_index(const std::string& name) const;
  // One learnable parameter (Error(kInvalidArgument) for an auxiliary
  // state), or every learnable one.
  void set_grad_req(const std::string& name, GradReq req);
  void set_grad_req(GradReq req);

  // Runs the net on one batch: inputs[i] is graph input i with a leading
  // batch dim (the same for all), float32, on the net's context or, for a
  // GPU net, on the CPU (copied to the device into a buffer kept per batch
  // size; the copy is complete when forward returns).
  // Error(kShapeMismatch) / (kDtypeMismatch) / (kInvalidArgument) name the
  // input and what was expected.
  void forward(const std::vector<core::NDArray>& inputs, bool train);

  // After a forward: the loss of the output against labels (int32 or int64,
  // shape (batch,), on the net's context or the CPU as for forward's
  // inputs), and every parameter's gradient
  // by its grad_req. Error(kBadState) without a forward.
  double backward(const core::NDArray& labels);

  // Called by backward once a learnable parameter's gradient is final, with
  // the parameter's index in parameters(). Layers run backward in reverse
  // order, so the last layer's gradients are ready first: a trainer sends
  // each one to its kvstore here, while backward goes on (what MXNet,
  // Horovod and PyTorch DDP do to overlap communication with compute).
  // Auxiliary states and parameters with grad_req kNull are not reported. An exception thrown by
  // the callback ends backward with it.
  using GradientReady = std::function<void(size_t param_index)>;
  double backward(const core::NDArray& labels, const GradientReady& on_gradient_ready);

  // The net's loss (its description's, SoftmaxCrossEntropy so far, with its
  // reduction) of the latest forward's output against labels, as backward
  // computes it but without gradients: what a trainer evaluates with, so it
  // need not know which loss the net trains. The same errors as backward.
  double loss(const core::NDArray& labels);

  // Replaces the loss's reduction ("mean" or "sum"; Error(kInvalidArgument)
  // otherwise), e.g. for a trainer that scales summed gradients itself; the
  // description follows.
  void set_loss_reduction(const std::string& reduction);

  // The dtype activations, weights copies and their gradients are computed
  // in: float32 (the default), or float16 / bfloat16 for mixed precision
  // (see above). Only before the first forward (Error(kBadState) after);
  // float16 / bfloat16 on a CPU context are Error(kNotSupported) (mixed
  // precision is a GPU feature), other dtypes Error(kInvalidArgument).
  // Resets the loss scaler to the dtype's default: dynamic (init 2^16)
  // for float16, disabled otherwise.
  void set_compute_dtype(core::DType dtype);
  core::DType compute_dtype() const { return precision_.compute_dtype(); }

  // The mixed-precision decisions (nn/mixed_precision_policy.h): the
  // compute dtype above, the loss scaler, and for a trainer whether a step
  // applies its update and on which side.
  MixedPrecisionPolicy& precision() { return precision_; }
  const MixedPrecisionPolicy& precision() const { return precision_; }

  // The loss scale's state machine; its scale() multiplies the next
  // backward's loss gradient. A trainer records each step through
  // precision().apply_update().
  LossScaler& loss_scaler() { return precision_.loss_scaler(); }
  const LossScaler& loss_scaler() const { return precision_.loss_scaler(); }
  // Replaces it, e.g. to enable scaling for bfloat16 or change its
  // options; Error(kInvalidArgument) to enable it on a float32 net.
  void set_loss_scaler(const LossScaler& scaler) { precision_.set_loss_scaler(scaler); }

  // Whether every learnable parameter's float32 gradient (grad_req other
  // than kNull) is finite: on a GPU one kernel per parameter sets one flag
  // in device memory, read once (this waits for the device). Call it after
  // gradients were reduced across workers, so that all agree.
  bool gradients_finite();

  size_t num_outputs() const { return 1; }
  // Output i of the latest forward; Error(kBadState) before the first.
  const core::NDArray& output(size_t index) const;

  // Parameters and auxiliary states as a safetensors file, names as keys.
  void save_params(const std::string& path) const;
  // Requires every parameter with its shape and dtype (Error(kNotFound) /
  // Error(kShapeMismatch) / Error(kDtypeMismatch) naming it) and changes
  // nothing unless all are there; entries the net lacks are ignored.
  void load_params(const std::string& path);

  // The same graph on ctx with copies of the parameter values, grad_reqs
  // and seed (gradients start at zero), e.g. one replica per device.
  std::unique_ptr<Net> clone(std::shared_ptr<core::Context> ctx) const;

 private:
  struct Node;
  struct Plan;

  void build_graph();
  void create_parameters();
  Plan& plan_for(const std::vector<core::NDArray>& inputs);
  void allocate_gradients(Plan& plan);
  // labels checked against the completed forward (Error(kBadState), saying
  // "net: <call> ...", without one), on the net's context (staged there
  // from the host).
  core::NDArray labels_for_last_forward(const core::NDArray& labels, const char* call);
  bool mixed_precision() const { return compute_params_ != nullptr; }
  // The parameters node's layer is given: the masters, or their views in
  // the compute dtype.
  const std::vector<Parameter*>& layer_params(const Node& node) const;

  NetDescription description_;
  std::shared_ptr<core::Context> ctx_;
  std::unique_ptr<ops::cpu::CpuEngine> engine_;
  LayerRuntime runtime_;
  // Nodes in execution order; value v < inputs is graph input v, value
  // inputs + k the output of nodes_[k].
  std::vector<Node> nodes_;
  size_t output_value_ = 0;
  std::vector<Parameter> params_;
  std::unique_ptr<layers::SoftmaxCrossEntropyLoss> loss_;
  // Per parameter: its layer reads it in the compute dtype (ParamSpec).
  std::vector<bool> param_in_compute_dtype_;
  std::unique_ptr<ComputeParameters> compute_params_;  // mixed precision only
  MixedPrecisionPolicy precision_;
  core::NDArray nonfinite_flag_;  // one int32 on a GPU, for gradients_finite
  bool forwarded_ = false;
  // Most recently used first; bounded so varying batch sizes cannot grow it.
  std::list<Plan> plans_;
  Plan* last_forward_ = nullptr;
};

// Builds a net from a JSON description text (parse_net_description's errors).
std::unique_ptr<Net> net_from_json(const std::string& text, std::shared_ptr<core::Context> ctx);

}  // namespace dt::nn
