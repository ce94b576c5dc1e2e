// What every layer implementation shares: argument checks that name the
// layer, attribute parsing that rejects what it does not know, a small
// kernel cache per (device, dtype, input shape), the ops::Target a call's
// kernels are made for, and the translation of kernel exceptions into the
// library's Error.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/ndarray.h"
#include "core/shape.h"
#include "nn/layer.h"
#include "ops/target.h"
#include "ops/tensor_layout.h"

namespace dt::nn::layers {

// "Conv2D 'conv1'", the prefix of every message about a layer.
std::string describe(const Layer& layer);

// Error(kShapeMismatch): "<Type> '<name>': expected input <expected>, got <shape>".
[[noreturn]] void throw_shape_error(const Layer& layer, const std::string& expected,
                                    const core::Shape& got);

// A float32 array on the CPU (Error(kDtypeMismatch) / Error(kNotSupported)
// naming the layer and `what` otherwise).
void check_cpu_float(const Layer& layer, const core::NDArray& array, const char* what);

// An array of `dtype` on `device`: check_cpu_float's rules when device is
// the CPU, else that very GPU (Error(kInvalidArgument) naming both devices,
// Error(kDtypeMismatch) naming both dtypes).
void check_float_on(const Layer& layer, const core::NDArray& array, const char* what,
                    const core::Context& device, core::DType dtype = core::DType::kFloat32);

// The checks every forward() needs before touching memory: the input count
// and each input's dtype and device, the output's shape against
// output_shape(), and the parameter count. Returns the input shapes.
// The first input's device and dtype are the call's: on the CPU every array
// must be float32 on the CPU (as check_cpu_float); on a GPU every array on
// that same GPU (Error(kInvalidArgument) naming both devices otherwise),
// activations of the first input's dtype (float32, float16 or bfloat16),
// parameters of that dtype where their spec says in_compute_dtype and
// float32 otherwise (Error(kDtypeMismatch)).
std::vector<core::Shape> check_forward(const Layer& layer, const ForwardArgs& args,
                                       size_t num_params);
// The same for backward(): inputs, output gradient and every requested input
// gradient (each must have its input's shape).
void check_backward(const Layer& layer, const BackwardArgs& args, size_t num_params);

// Whether the call runs on a GPU: its first input's device decides, after
// check_forward/check_backward made sure the other arrays agree.
bool on_gpu(const core::NDArray& first_input);

// Error(kNotSupported): "<Type> '<name>': no GPU kernel <why>".
[[noreturn]] void throw_no_gpu_kernel(const Layer& layer, const std::string& why);

// The CPU engine from the runtime; Error(kBadState) when Net did not set one.
const ops::cpu::CpuEngine& engine_of(const Layer& layer, const LayerRuntime* runtime);

// Where the kernels for `input` run: its context and dtype, and on the CPU
// the runtime's engine (engine_of's Error when there is none).
ops::Target target_of(const Layer& layer, const core::NDArray& input, const LayerRuntime* runtime);

// Runs fn, turning the kernels' std::invalid_argument into
// Error(kInvalidArgument), std::logic_error into Error(kBadState) and other
// std::exception (oneDNN's dnnl::error) into Error(kInternal), each prefixed
// with the layer. Errors of the library pass unchanged.
template <typename F>
decltype(auto) run_kernel(const Layer& layer, F&& fn);

// Computes two parameter gradients that one kernel call produces together
// (weight and bias, gamma and beta), each written or accumulated by its own
// grad_req. A gradient that is not wanted goes to a scratch buffer of its
// size and dtype, on the parameter's device; nothing runs when neither is
// wanted. b may be nullptr (no bias; db is then null).
void fused_param_grads(Parameter& a, Parameter* b,
                       const std::function<void(KernelData da, KernelData db)>& compute);

// Kernels built for one input, looked up by its device, dtype and shape.
// A net sees a handful of shapes (the full batch, the epoch's last,
// evaluation batches), so a short list beats a map; the oldest entry of a
// device goes when it holds kCapacity, so that a stream of varying shapes
// cannot grow it without bound. GPU kernels are bound to the context they
// were built on (stream, handles, memory) and to their dtype: a call on
// another GPU context or with another dtype drops those of the previous one
// (a net keeps one of each), while the CPU kernels stay. Each GPU kernel
// holds its context, so a context pointer kept here cannot be reused by
// another context while its entries live.
template <typename Kernel>
class KernelCache {
 public:
  static constexpr size_t kCapacity = 4;

  // The kernel for input, built by make() (a std::unique_ptr<Kernel>) the
  // first time.
  template <typename Make>
  Kernel& get(const core::NDArray& input, Make&& make);

  // The kernel for input if one was built, else nullptr (MaxPool2D's
  // backward needs the very object whose forward recorded the argmax).
  Kernel* find(const core::NDArray& input);

 private:
  struct Entry {
    const core::Context* gpu;  // nullptr for every CPU context: CPU kernels are not bound to one
    core::DType dtype;
    core::Shape shape;
    std::unique_ptr<Kernel> kernel;
  };

  static const core::Context* gpu_of(const core::NDArray& input) {
    return input.context()->is_cpu() ? nullptr : input.context().get();
  }

  std::vector<Entry> entries_;
};

// Reads a layer's JSON attributes, remembering which keys it consumed, so
// that finish() can reject the rest: a misspelt "stride" must not silently
// become the default.
class AttributeReader {
 public:
  AttributeReader(const char* type, const std::string& name, const nlohmann::json& attributes);

  bool has(const char* key) const;
  int64_t get_int(const char* key, int64_t fallback, int64_t min_value);
  double get_double(const char* key, double fallback);
  bool get_bool(const char* key, bool fallback);
  std::string get_string(const char* key, const std::string& fallback);
  // An int n (meaning (n, n)) or a list of two ints, each >= min_value.
  std::pair<int64_t, int64_t> get_pair(const char* key, std::pair<int64_t, int64_t> fallback,
                                       int64_t min_value);
  // A kind name ("xavier_uniform") or {"kind": ..., "value"/"scale"/"gain": ...}.
  Initializer get_initializer(const char* key, const Initializer& fallback);
  // MXNet's `layout` of a 4-d layer: "NCHW" (the default) or "NHWC".
  ops::TensorLayout get_layout(const char* key);
  // The first of several accepted spellings that is present (Gluon's
  // kernel_size and MXNet's kernel); Error if more than one is.
  const char* pick_alias(const char* primary, const char* alias);

  // Error(kInvalidArgument) listing the unknown keys and the known ones.
  void finish() const;

  [[noreturn]] void fail(const std::string& key, const std::string& what) const;

 private:
  const nlohmann::json& value_of(const char* key);

  std::string prefix_;
  const nlohmann::json& attributes_;
  std::set<std::string> known_;
};

nlohmann::json pair_to_json(std::pair<int64_t, int64_t> value);
nlohmann::json initializer_to_json(const Initializer& init);
// Adds "layout" to a 4-d layer's attributes when it is not the default
// NCHW, so that NCHW descriptions read as they always did.
void add_layout_attribute(nlohmann::json& attributes, ops::TensorLayout layout);
// "(N, C, H, W)" or "(N, H, W, C)": the input a 4-d layer of `layout` expects.
std::string layout_dims_text(ops::TensorLayout layout);

// Forward and backward of a layer whose kernel computes y = f(x; weight, bias)
// with forward(x, w, b, y), backward_data(dy, w, dx) and
// backward_weights(x, dy, dw, db): Dense and Conv2D differ only in the kernel.
// params[0] is the weight, params[1] the bias when use_bias; arguments are
// already checked.
template <typename Kernel>
void weighted_forward(const Layer& layer, Kernel& kernel, const ForwardArgs& args, bool use_bias);
template <typename Kernel>
void weighted_backward(const Layer& layer, Kernel& kernel, const BackwardArgs& args, bool use_bias);

// ---- implementation of the templates ---------------------------------------

template <typename Kernel>
template <typename Make>
Kernel& KernelCache<Kernel>::get(const core::NDArray& input, Make&& make) {
  if (Kernel* kernel = find(input)) return *kernel;
  const core::Context* gpu = gpu_of(input);
  std::unique_ptr<Kernel> kernel = make();
  if (gpu != nullptr) {
    entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                  [&](const Entry& e) {
                                    return e.gpu != nullptr && (e.gpu != gpu || e.dtype != input.dtype());
                                  }),
                   entries_.end());
  }
  const auto same_device = [&](const Entry& e) { return e.gpu == gpu; };
  if (static_cast<size_t>(std::count_if(entries_.begin(), entries_.end(), same_device)) == kCapacity) {
    entries_.erase(std::find_if(entries_.begin(), entries_.end(), same_device));
  }
  entries_.push_back(Entry{gpu, input.dtype(), input.shape(), std::move(kernel)});
  return *entries_.back().kernel;
}

template <typename Kernel>
Kernel* KernelCache<Kernel>::find(const core::NDArray& input) {
  const core::Context* gpu = gpu_of(input);
  for (Entry& e : entries_) {
    if (e.gpu == gpu && e.dtype == input.dtype() && e.shape == input.shape()) return e.kernel.get();
  }
  return nullptr;
}

template <typename F>
decltype(auto) run_kernel(const Layer& layer, F&& fn) {
  try {
    return fn();
  } catch (const core::Error&) {
    throw;
  } catch (const std::invalid_argument& e) {
    throw core::Error(core::ErrorCode::kInvalidArgument, describe(layer) + ": " + e.what());
  } catch (const std::logic_error& e) {
    throw core::Error(core::ErrorCode::kBadState, describe(layer) + ": " + e.what());
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    throw core::Error(core::ErrorCode::kInternal, describe(layer) + ": " + e.what());
  }
}

template <typename Kernel>
void weighted_forward(const Layer& layer, Kernel& kernel, const ForwardArgs& args, bool use_bias) {
  const KernelData x(*args.inputs[0]);
  const KernelData b = use_bias ? KernelData(args.params[1]->value) : KernelData(nullptr, core::DType::kFloat32);
  const KernelData y(*args.output);
  run_kernel(layer, [&] { kernel.forward(x, KernelData(args.params[0]->value), b, y); });
}

template <typename Kernel>
void weighted_backward(const Layer& layer, Kernel& kernel, const BackwardArgs& args, bool use_bias) {
  const KernelData x(*args.inputs[0]);
  const KernelData dy(*args.output_grad);
  Parameter& weight = *args.params[0];
  run_kernel(layer, [&] {
    if (args.input_grads[0] != nullptr) {
      kernel.backward_data(dy, KernelData(weight.value), KernelData(*args.input_grads[0]));
    }
    fused_param_grads(weight, use_bias ? args.params[1] : nullptr,
                      [&](KernelData dw, KernelData db) { kernel.backward_weights(x, dy, dw, db); });
  });
}

}  // namespace dt::nn::layers
