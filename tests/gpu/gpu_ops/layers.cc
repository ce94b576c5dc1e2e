// The GPU layer ops through the Layer interface: dispatch to the GPU kernels,
// a LeNet trained on both devices, and mixed devices refused.
#include "gpu_ops_test_util.h"

namespace dt::gpu_ops_test {

// A chain of layers with its parameters, run through the Layer interface on
// one context: what Net does for a chain, without its graph machinery.
class Chain {
 public:
  Chain(std::shared_ptr<core::Context> ctx, const ops::cpu::CpuEngine& engine, const Shape& input)
      : ctx_(std::move(ctx)) {
    runtime_.engine = &engine;
    const std::vector<std::pair<std::string, nlohmann::json>> layers = {
        {"Conv2D", {{"channels", 6}, {"kernel_size", 5}, {"padding", 2}}},
        {"ReLU", nlohmann::json::object()},
        {"MaxPool2D", {{"pool_size", 2}}},
        {"Conv2D", {{"channels", 16}, {"kernel_size", 5}}},
        {"ReLU", nlohmann::json::object()},
        {"MaxPool2D", {{"pool_size", 2}}},
        {"Flatten", nlohmann::json::object()},
        {"Dense", {{"units", 120}}},
        {"ReLU", nlohmann::json::object()},
        {"Dense", {{"units", 84}}},
        {"ReLU", nlohmann::json::object()},
        {"Dense", {{"units", 10}}},
    };
    Shape shape = input;
    shapes_.push_back(shape);
    std::mt19937 gen(1234);
    for (size_t i = 0; i < layers.size(); ++i) {
      layers_.push_back(nn::create_layer(layers[i].first, "l" + std::to_string(i), layers[i].second));
      std::vector<nn::Parameter> params;
      for (const nn::ParamSpec& spec : layers_.back()->param_specs({shape})) {
        nn::Parameter p;
        p.name = "l" + std::to_string(i) + "." + spec.suffix;
        // Glorot-uniform weights, zero biases, from one seeded generator, so
        // that both devices start from the same bytes.
        std::vector<float> host(static_cast<size_t>(spec.shape.numel()), 0.0f);
        if (spec.suffix == "weight") {
          const double fan_out = static_cast<double>(spec.shape[0]);
          const double fan_in = static_cast<double>(spec.shape.numel()) / fan_out;
          const double fan_out_field = fan_out * (spec.shape.ndim() == 4 ? spec.shape[2] * spec.shape[3] : 1);
          const float a = static_cast<float>(std::sqrt(6.0 / (fan_in + fan_out_field)));
          std::uniform_real_distribution<float> dist(-a, a);
          for (float& v : host) v = dist(gen);
        }
        p.value = NDArray::empty(ctx_, DType::kFloat32, spec.shape);
        p.value.copy_from_host(host.data(), host.size() * sizeof(float));
        p.grad = NDArray::zeros(ctx_, DType::kFloat32, spec.shape);
        params.push_back(p);
      }
      params_.push_back(std::move(params));
      shape = layers_.back()->output_shape({shape});
      shapes_.push_back(shape);
    }
    for (const Shape& s : shapes_) {
      acts_.push_back(NDArray::empty(ctx_, DType::kFloat32, s));
      grads_.push_back(NDArray::empty(ctx_, DType::kFloat32, s));
    }
  }

  const NDArray& forward(const std::vector<float>& images, bool train) {
    acts_[0].copy_from_host(images.data(), images.size() * sizeof(float));
    ++runtime_.step;
    for (size_t i = 0; i < layers_.size(); ++i) {
      nn::ForwardArgs args;
      args.inputs = {&acts_[i]};
      args.params = param_ptrs(i);
      args.output = &acts_[i + 1];
      args.train = train;
      args.runtime = &runtime_;
      layers_[i]->forward(args);
    }
    return acts_.back();
  }

  double train_step(const std::vector<float>& images, const std::vector<int32_t>& labels, float lr) {
    forward(images, true);
    NDArray y = NDArray::empty(ctx_, DType::kInt32, Shape({static_cast<int64_t>(labels.size())}));
    y.copy_from_host(labels.data(), labels.size() * sizeof(int32_t));
    const double loss = loss_.forward_backward(acts_.back(), y, &grads_.back());
    for (size_t i = layers_.size(); i-- > 0;) {
      nn::BackwardArgs args;
      args.inputs = {&acts_[i]};
      args.output = &acts_[i + 1];
      args.output_grad = &grads_[i + 1];
      args.input_grads = {i == 0 ? nullptr : &grads_[i]};
      args.params = param_ptrs(i);
      args.runtime = &runtime_;
      layers_[i]->backward(args);
    }
    for (auto& layer_params : params_) {
      for (nn::Parameter& p : layer_params) ops::axpy(p.value, -lr, p.grad);
    }
    return loss;
  }

 private:
  std::vector<nn::Parameter*> param_ptrs(size_t layer) {
    std::vector<nn::Parameter*> out;
    for (nn::Parameter& p : params_[layer]) out.push_back(&p);
    return out;
  }

  std::shared_ptr<core::Context> ctx_;
  nn::LayerRuntime runtime_;
  std::vector<std::unique_ptr<nn::Layer>> layers_;
  std::vector<std::vector<nn::Parameter>> params_;
  std::vector<Shape> shapes_;
  std::vector<NDArray> acts_, grads_;
  nn::layers::SoftmaxCrossEntropyLoss loss_;
};

constexpr const char* kFashionMnist = "/usr/share/datasets/fashion-mnist";

// Images as (x / 255 - mean) / std floats, in the order of `indices`.
std::vector<float> images_of(const data::MnistDataset& set, const std::vector<int64_t>& indices) {
  const uint8_t* pixels = set.images().data_as<uint8_t>();
  std::vector<float> out;
  out.reserve(indices.size() * 784);
  for (int64_t i : indices) {
    for (int64_t j = 0; j < 784; ++j) out.push_back((pixels[i * 784 + j] / 255.0f - 0.2860f) / 0.3530f);
  }
  return out;
}

std::vector<int32_t> labels_of(const data::MnistDataset& set, const std::vector<int64_t>& indices) {
  const int32_t* labels = set.labels().data_as<int32_t>();
  std::vector<int32_t> out;
  for (int64_t i : indices) out.push_back(labels[i]);
  return out;
}

double train_and_evaluate(const std::shared_ptr<core::Context>& ctx, const ops::cpu::CpuEngine& engine,
                          const data::MnistDataset& train, const data::MnistDataset& test) {
  constexpr int64_t kBatch = 64, kSteps = 300, kTestBatches = 16;
  constexpr float kLearningRate = 0.05f;
  Chain chain(ctx, engine, Shape({kBatch, 1, 28, 28}));
  std::vector<int64_t> order(static_cast<size_t>(train.size()));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(42));
  for (int64_t step = 0; step < kSteps; ++step) {
    const std::vector<int64_t> idx(order.begin() + step * kBatch, order.begin() + (step + 1) * kBatch);
    const double loss = chain.train_step(images_of(train, idx), labels_of(train, idx), kLearningRate);
    if (!std::isfinite(loss)) {
      ADD_FAILURE() << ctx->to_string() << ": loss " << loss << " at step " << step;
      return 0.0;
    }
  }
  int64_t correct = 0;
  for (int64_t b = 0; b < kTestBatches; ++b) {
    std::vector<int64_t> idx(kBatch);
    std::iota(idx.begin(), idx.end(), b * kBatch);
    const NDArray& logits = chain.forward(images_of(test, idx), false);
    std::vector<float> host(static_cast<size_t>(kBatch * 10));
    logits.copy_to_host(host.data(), host.size() * sizeof(float));
    const std::vector<int32_t> labels = labels_of(test, idx);
    for (int64_t i = 0; i < kBatch; ++i) {
      const auto row = host.begin() + i * 10;
      if (std::max_element(row, row + 10) - row == labels[static_cast<size_t>(i)]) ++correct;
    }
  }
  return static_cast<double>(correct) / static_cast<double>(kTestBatches * kBatch);
}

// LeNet needs Conv2D, whose GPU kernel is cuDNN's: without cuDNN the test
// is not built (Conv2D on a GPU is NOT_SUPPORTED in such a build).
#if DT_WITH_CUDNN
TEST_F(GpuOps, LeNetOnGpuReachesCpuAccuracy) {
  std::unique_ptr<data::MnistDataset> train, test;
  try {
    train = std::make_unique<data::MnistDataset>(
        data::MnistDataset::from_directory(kFashionMnist, data::MnistSplit::kTrain));
    test = std::make_unique<data::MnistDataset>(
        data::MnistDataset::from_directory(kFashionMnist, data::MnistSplit::kTest));
  } catch (const core::Error& e) {
    FAIL() << "Fashion-MNIST is missing (scripts/install-deps.sh installs dataset-fashion-mnist): " << e.what();
  }
  const double cpu_accuracy = train_and_evaluate(core::make_cpu_context(), engine_, *train, *test);
  const double gpu_accuracy = train_and_evaluate(gpu_, engine_, *train, *test);
  std::printf("LeNet, 300 steps of 64: test accuracy cpu %.4f, gpu %.4f\n", cpu_accuracy, gpu_accuracy);
  EXPECT_GT(cpu_accuracy, 0.70);
  EXPECT_GE(gpu_accuracy, cpu_accuracy - 0.02);
}
#endif  // DT_WITH_CUDNN

TEST_F(GpuOps, LayersRejectMixedDevices) {
  const Shape shape({2, 3, 4, 4});
  NDArray x = NDArray::zeros(gpu_, DType::kFloat32, shape);
  NDArray cpu_out = NDArray::zeros(core::make_cpu_context(), DType::kFloat32, shape);
  nn::LayerRuntime runtime;
  runtime.engine = &engine_;

  auto relu = nn::create_layer("ReLU", "relu", nlohmann::json::object());
  nn::ForwardArgs args;
  args.inputs = {&x};
  args.output = &cpu_out;
  args.runtime = &runtime;
  try {
    relu->forward(args);
    ADD_FAILURE() << "a CPU output for a GPU input was accepted";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.code(), core::ErrorCode::kInvalidArgument) << e.what();
  }
}

}  // namespace dt::gpu_ops_test
