#include "nn/layers/max_pool2d_layer.h"

namespace dt::nn::layers {

MaxPool2DLayer::MaxPool2DLayer(std::string name, const Window& window)
    : Pool2DLayer(std::move(name), window) {
  validate_window();
}

std::unique_ptr<Layer> MaxPool2DLayer::create(const std::string& name, const nlohmann::json& attributes) {
  AttributeReader reader("MaxPool2D", name, attributes);
  const Window window = read_window(reader);
  reader.finish();
  return std::make_unique<MaxPool2DLayer>(name, window);
}

void MaxPool2DLayer::forward(const ForwardArgs& args) {
  check_forward(*this, args, 0);
  const core::NDArray& x = *args.inputs[0];
  // The same steps on either device; only the kernel differs.
  const auto run = [&](auto& k, bool gpu) {
    argmax_current_ = false;
    run_kernel(*this, [&] {
      // Only a training forward records the argmax that backward routes through.
      if (args.train) {
        k.forward_training(KernelData(x), KernelData(*args.output));
      } else {
        k.forward_inference(KernelData(x), KernelData(*args.output));
      }
    });
    argmax_current_ = args.train;
    argmax_on_gpu_ = gpu;
    argmax_shape_ = x.shape();
  };
#if DT_WITH_CUDA
  if (on_gpu(x)) {
    run(gpu_kernels_.get(
            x.context(), x.shape(),
            [&] {
              const ops::cpu::Pool2DParams p = params_for(x.shape());
              return run_kernel(*this, [&] { return ops::cuda::MaxPool2D(x.context(), p, x.dtype()); });
            },
            x.dtype()),
        true);
    return;
  }
#endif
  run(kernels_.get(x.shape(),
                   [&] {
                     const ops::cpu::Pool2DParams p = params_for(x.shape());
                     return run_kernel(*this, [&] { return ops::cpu::MaxPool2D(engine_of(*this, args.runtime), p); });
                   }),
      false);
}

void MaxPool2DLayer::backward(const BackwardArgs& args) {
  check_backward(*this, args, 0);
  if (args.input_grads[0] == nullptr) return;
  const core::NDArray& x = *args.inputs[0];
  const bool gpu = on_gpu(x);
  if (!argmax_current_ || argmax_on_gpu_ != gpu || argmax_shape_ != x.shape()) {
    throw core::Error(core::ErrorCode::kBadState, describe(*this) + ": backward needs a training forward on input " +
                                                      x.shape().to_string() + " first");
  }
#if DT_WITH_CUDA
  if (gpu) {
    ops::cuda::MaxPool2D* k = gpu_kernels_.find(x.context(), x.shape(), x.dtype());
    if (k == nullptr) {
      throw core::Error(core::ErrorCode::kBadState,
                        describe(*this) + ": backward needs a training forward on " + x.context()->to_string() + " first");
    }
    run_kernel(*this, [&] { k->backward(args.output_grad->data(), args.input_grads[0]->data()); });
    return;
  }
#endif
  ops::cpu::MaxPool2D* k = kernels_.find(x.shape());
  if (k == nullptr) {
    throw core::Error(core::ErrorCode::kBadState,
                      describe(*this) + ": backward needs a training forward on input " + x.shape().to_string() +
                          " first");
  }
  run_kernel(*this, [&] {
    k->backward(args.output_grad->data_as<float>(), args.input_grads[0]->data_as<float>());
  });
}

}  // namespace dt::nn::layers
