#include "nn/layers/avg_pool2d_layer.h"

namespace dt::nn::layers {

AvgPool2DLayer::AvgPool2DLayer(std::string name, const Window& window, bool count_include_pad)
    : Pool2DLayer(std::move(name), window),
      count_include_pad_(count_include_pad) {
  validate_window();
}

std::unique_ptr<Layer> AvgPool2DLayer::create(const std::string& name, const nlohmann::json& attributes) {
  AttributeReader reader("AvgPool2D", name, attributes);
  const Window window = read_window(reader);
  const bool count_include_pad = reader.get_bool("count_include_pad", true);
  reader.finish();
  return std::make_unique<AvgPool2DLayer>(name, window, count_include_pad);
}

ops::cpu::AvgPool2D& AvgPool2DLayer::kernel(const core::Shape& input, const LayerRuntime* runtime) {
  return kernels_.get(input, [&] {
    const ops::cpu::Pool2DParams p = params_for(input);
    return run_kernel(*this,
                      [&] { return ops::cpu::AvgPool2D(engine_of(*this, runtime), p, count_include_pad_); });
  });
}

#if DT_WITH_CUDA
ops::cuda::AvgPool2D& AvgPool2DLayer::gpu_kernel(const core::NDArray& input) {
  return gpu_kernels_.get(
      input.context(), input.shape(),
      [&] {
        const ops::cpu::Pool2DParams p = params_for(input.shape());
        return run_kernel(*this,
                          [&] { return ops::cuda::AvgPool2D(input.context(), p, count_include_pad_, input.dtype()); });
      },
      input.dtype());
}
#endif

void AvgPool2DLayer::forward(const ForwardArgs& args) {
  check_forward(*this, args, 0);
  const core::NDArray& x = *args.inputs[0];
#if DT_WITH_CUDA
  if (on_gpu(x)) {
    ops::cuda::AvgPool2D& k = gpu_kernel(x);
    run_kernel(*this, [&] { k.forward(x.data(), args.output->data()); });
    return;
  }
#endif
  ops::cpu::AvgPool2D& k = kernel(x.shape(), args.runtime);
  run_kernel(*this, [&] { k.forward(x.data_as<float>(), args.output->data_as<float>()); });
}

void AvgPool2DLayer::backward(const BackwardArgs& args) {
  check_backward(*this, args, 0);
  if (args.input_grads[0] == nullptr) return;
#if DT_WITH_CUDA
  if (on_gpu(*args.inputs[0])) {
    ops::cuda::AvgPool2D& k = gpu_kernel(*args.inputs[0]);
    run_kernel(*this, [&] { k.backward(args.output_grad->data(), args.input_grads[0]->data()); });
    return;
  }
#endif
  ops::cpu::AvgPool2D& k = kernel(args.inputs[0]->shape(), args.runtime);
  run_kernel(*this, [&] {
    k.backward(args.output_grad->data_as<float>(), args.input_grads[0]->data_as<float>());
  });
}

nlohmann::json AvgPool2DLayer::attributes() const {
  nlohmann::json a = Pool2DLayer::attributes();
  a["count_include_pad"] = count_include_pad_;
  return a;
}

}  // namespace dt::nn::layers
