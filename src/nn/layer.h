// A layer: one node of a network's graph, with forward and backward on the
// device of its input. The ops it runs (ops/) pick their CPU kernels
// (oneDNN) or GPU kernels (cuDNN, cuBLAS, own CUDA kernels) themselves.
//
// Contract between Net and Layer:
//  - Shapes include the batch dimension. Net calls output_shape() and
//    param_specs() once per new input shape, allocates the parameters (once)
//    and the activations, then calls forward()/backward() with them.
//  - forward() overwrites its output. backward() overwrites each requested
//    input gradient (Net sums gradients where an activation feeds several
//    layers) and handles each parameter gradient by its grad_req (write, add,
//    or skip) through write_param_grad().
//  - A layer may cache kernels per input shape; it owns them.
//  - Errors are dt::core::Error; shape errors name the layer and the shapes.
//  - On a GPU, activations and their gradients may be float16 or bfloat16
//    (a mixed-precision net's compute dtype; all arrays of one call share
//    it); parameters are then of the compute dtype where their spec says
//    in_compute_dtype (a copy the net casts from the float32 master) and
//    float32 otherwise. On the CPU everything is float32.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/ndarray.h"
#include "core/shape.h"
#include "nn/initializer.h"
#include "nn/kernel_data.h"
#include "nn/parameter.h"

namespace dt::ops::cpu {
class CpuEngine;  // only passed through to the ops: layers never include oneDNN
}  // namespace dt::ops::cpu

namespace dt::nn {

struct ParamSpec {
  std::string suffix;  // "weight", "bias", "gamma", "running_mean", ...
  core::Shape shape;
  Initializer init;
  bool auxiliary = false;  // saved and loaded, no gradient, not synchronised
  // Mixed precision: the layer's kernel reads this parameter in the net's
  // compute dtype (the weights of Dense and Conv2D, which feed GEMMs and
  // convolutions); otherwise it stays float32 (biases, BatchNorm's).
  bool in_compute_dtype = false;
};

// What every layer call can reach besides its tensors.
struct LayerRuntime {
  const ops::cpu::CpuEngine* engine = nullptr;
  uint64_t seed = 0;  // base seed for stochastic layers (Dropout), set by Net
  uint64_t step = 0;  // forward counter, so Dropout masks differ per step but replay per seed
};

struct ForwardArgs {
  std::vector<const core::NDArray*> inputs;
  std::vector<Parameter*> params;  // in param_specs() order
  core::NDArray* output = nullptr;
  bool train = false;
  LayerRuntime* runtime = nullptr;
};

struct BackwardArgs {
  std::vector<const core::NDArray*> inputs;   // as given to the last forward
  const core::NDArray* output = nullptr;      // as computed by the last forward
  const core::NDArray* output_grad = nullptr;
  std::vector<core::NDArray*> input_grads;    // nullptr: not needed (e.g. the data)
  std::vector<Parameter*> params;
  LayerRuntime* runtime = nullptr;
};

class Layer {
 public:
  explicit Layer(std::string name) : name_(std::move(name)) {}
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  const std::string& name() const { return name_; }
  // The type name used in JSON descriptions: "Dense", "Conv2D", ...
  virtual const char* type() const = 0;
  virtual size_t num_inputs() const { return 1; }

  virtual core::Shape output_shape(const std::vector<core::Shape>& inputs) const = 0;
  virtual std::vector<ParamSpec> param_specs(const std::vector<core::Shape>& /*inputs*/) const { return {}; }

  virtual void forward(const ForwardArgs& args) = 0;
  virtual void backward(const BackwardArgs& args) = 0;

  // The layer's attributes for a JSON description (without name/type/inputs),
  // such that create_layer(type, name, attributes) rebuilds an equal layer.
  virtual nlohmann::json attributes() const { return nlohmann::json::object(); }

 private:
  std::string name_;
};

// Builds a layer from its JSON type name and attributes; unknown types and
// bad attributes are Error(kInvalidArgument) naming the layer.
std::unique_ptr<Layer> create_layer(const std::string& type, const std::string& name,
                                    const nlohmann::json& attributes);

// Runs compute(dst) so that param's gradient ends up written or accumulated
// according to its grad_req; does nothing for kNull. compute writes a full
// gradient into dst (a scratch buffer when accumulating), of the gradient's
// dtype: the value's (float32, or on a GPU the compute dtype).
void write_param_grad(Parameter& param, const std::function<void(KernelData dst)>& compute);

}  // namespace dt::nn
