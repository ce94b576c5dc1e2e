#include "nn/layers/global_avg_pool2d_layer.h"

#include "ops/cpu/pooling.h"
#if DT_WITH_CUDA
#include "ops/cuda/pooling.h"
#endif

namespace dt::nn::layers {
namespace {

// The kernel is a few integers and a loop: building one per call costs
// nothing, so there is no cache.
ops::cpu::GlobalAvgPool2D kernel_for(const ops::cpu::CpuEngine& engine, const core::Shape& x) {
  return ops::cpu::GlobalAvgPool2D(engine, x[0], x[1], x[2], x[3]);
}

}  // namespace

std::unique_ptr<Layer> GlobalAvgPool2DLayer::create(const std::string& name, const nlohmann::json& attributes) {
  AttributeReader("GlobalAvgPool2D", name, attributes).finish();
  return std::make_unique<GlobalAvgPool2DLayer>(name);
}

core::Shape GlobalAvgPool2DLayer::output_shape(const std::vector<core::Shape>& inputs) const {
  const core::Shape& x = inputs.at(0);
  if (x.ndim() != 4 || x.numel() == 0) throw_shape_error(*this, "a non-empty (N, C, H, W)", x);
  return core::Shape({x[0], x[1], 1, 1});
}

void GlobalAvgPool2DLayer::forward(const ForwardArgs& args) {
  check_forward(*this, args, 0);
  const core::NDArray& x = *args.inputs[0];
#if DT_WITH_CUDA
  if (on_gpu(x)) {
    run_kernel(*this, [&] {
      ops::cuda::GlobalAvgPool2D(x.context(), x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3], x.dtype())
          .forward(x.data(), args.output->data());
    });
    return;
  }
#endif
  run_kernel(*this, [&] { kernel_for(engine_of(*this, args.runtime), x.shape()).forward(x.data_as<float>(), args.output->data_as<float>()); });
}

void GlobalAvgPool2DLayer::backward(const BackwardArgs& args) {
  check_backward(*this, args, 0);
  if (args.input_grads[0] == nullptr) return;
#if DT_WITH_CUDA
  if (on_gpu(*args.inputs[0])) {
    const core::NDArray& x = *args.inputs[0];
    run_kernel(*this, [&] {
      ops::cuda::GlobalAvgPool2D(x.context(), x.shape()[0], x.shape()[1], x.shape()[2], x.shape()[3], x.dtype())
          .backward(args.output_grad->data(), args.input_grads[0]->data());
    });
    return;
  }
#endif
  run_kernel(*this, [&] {
    kernel_for(engine_of(*this, args.runtime), args.inputs[0]->shape())
        .backward(args.output_grad->data_as<float>(), args.input_grads[0]->data_as<float>());
  });
}

}  // namespace dt::nn::layers
