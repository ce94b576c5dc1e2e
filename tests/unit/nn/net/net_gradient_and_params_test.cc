// A net's gradients through fan-out (checked by finite differences),
// grad_req, parameter files, clones, seeded initialization and its thread
// count.
#include <gtest/gtest.h>

#include "net_graph_test_util.h"

namespace dt::nn {
namespace {

using namespace net_graph_test;

// x (3) -> a = fc1 -> t = tanh -> fc2 ; s = fc2 + t (t feeds two layers) ;
// d = s + s (one layer reads s twice) -> out = fc3 (4 classes).
const char* kFanOut = R"({
  "format": "disttrain.net", "version": 1,
  "inputs": [{"name": "x", "shape": [3]}],
  "layers": [
    {"name": "fc1", "type": "Dense", "units": 5},
    {"name": "t", "type": "Tanh"},
    {"name": "fc2", "type": "Dense", "units": 5},
    {"name": "s", "type": "Add", "inputs": ["fc2", "t"]},
    {"name": "d", "type": "Add", "inputs": ["s", "s"]},
    {"name": "fc3", "type": "Dense", "units": 4}
  ],
  "loss": {"type": "SoftmaxCrossEntropy", "reduction": "sum"}
})";

TEST(NetGradient, FanOutGradientsMatchFiniteDifferences) {
  auto net = net_of(kFanOut);
  net->initialize(11);
  const auto x = random_array(net->context(), Shape{6, 3}, 2);
  const auto labels = labels_array(net->context(), {0, 1, 2, 3, 1, 2});
  const auto loss_at = [&] {
    net->forward({x}, true);
    return net->backward(labels);
  };
  loss_at();
  std::vector<std::vector<float>> analytic;
  for (const auto& p : net->parameters()) analytic.push_back(to_vector(p.grad));

  const float eps = 1e-2f;
  for (size_t i = 0; i < net->parameters().size(); ++i) {
    Parameter& p = net->parameters()[i];
    std::vector<float> w = to_vector(p.value);
    for (size_t j = 0; j < w.size(); ++j) {
      const float saved = w[j];
      w[j] = saved + eps;
      p.value.copy_from_host(w.data(), w.size() * sizeof(float));
      const double up = loss_at();
      w[j] = saved - eps;
      p.value.copy_from_host(w.data(), w.size() * sizeof(float));
      const double down = loss_at();
      w[j] = saved;
      p.value.copy_from_host(w.data(), w.size() * sizeof(float));
      const double numeric = (up - down) / (2.0 * eps);
      EXPECT_NEAR(analytic[i][j], numeric, 2e-3 + 2e-2 * std::fabs(numeric)) << p.name << "[" << j << "]";
    }
  }
}

TEST(NetGradient, GradReqAddAccumulatesAndNullSkips) {
  auto net = net_of(kFanOut);
  net->initialize(3);
  const auto x = random_array(net->context(), Shape{4, 3}, 9);
  const auto labels = labels_array(net->context(), {3, 2, 1, 0});
  net->forward({x}, true);
  net->backward(labels);
  std::vector<std::vector<float>> once;
  for (const auto& p : net->parameters()) once.push_back(to_vector(p.grad));

  net->set_grad_req(GradReq::kAdd);
  net->set_grad_req("fc1.bias", GradReq::kNull);
  ops::fill(net->parameters()[net->param_index("fc1.bias")].grad, 5.0);
  for (int i = 0; i < 2; ++i) {
    net->forward({x}, true);
    net->backward(labels);
  }
  for (size_t i = 0; i < net->parameters().size(); ++i) {
    const auto& p = net->parameters()[i];
    const auto twice = to_vector(p.grad);
    for (size_t j = 0; j < twice.size(); ++j) {
      if (p.name == "fc1.bias") {
        EXPECT_EQ(twice[j], 5.0f) << "kNull leaves the gradient alone";
      } else {
        // kAdd added two more gradients to the one kWrite left.
        EXPECT_NEAR(twice[j], 3.0f * once[i][j], 1e-5f + 1e-4f * std::fabs(once[i][j])) << p.name;
      }
    }
  }
  EXPECT_EQ(error_of([&] { net->set_grad_req("nope", GradReq::kAdd); }).code, ErrorCode::kNotFound);
  auto resnet = model("resnet18", R"({"input_shape": [3, 8, 8]})");
  EXPECT_EQ(error_of([&] { resnet->set_grad_req("bn1.running_mean", GradReq::kAdd); }).code,
            ErrorCode::kInvalidArgument);
}

class NetParamsFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/dt-net-test.XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    if (DIR* d = ::opendir(dir_.c_str())) {
      while (dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        if (name != "." && name != "..") std::remove((dir_ + "/" + name).c_str());
      }
      ::closedir(d);
    }
    ::rmdir(dir_.c_str());
  }
  std::string dir_;
};

TEST_F(NetParamsFile, SaveLoadRoundTripIncludingAuxiliaryStates) {
  auto a = model("resnet18", R"({"input_shape": [3, 8, 8], "classes": 3})");
  a->initialize(5);
  // A training forward moves BatchNorm's running statistics away from their start.
  a->forward({random_array(a->context(), Shape{4, 3, 8, 8}, 1, 3.0f)}, true);
  const std::string path = dir_ + "/resnet.safetensors";
  a->save_params(path);

  auto b = model("resnet18", R"({"input_shape": [3, 8, 8], "classes": 3})");
  b->load_params(path);
  for (size_t i = 0; i < a->parameters().size(); ++i) {
    EXPECT_EQ(to_vector(a->parameters()[i].value), to_vector(b->parameters()[i].value))
        << a->parameters()[i].name;
  }
  const auto x = random_array(a->context(), Shape{2, 3, 8, 8}, 2);
  a->forward({x}, false);
  b->forward({x}, false);
  EXPECT_EQ(to_vector(a->output(0)), to_vector(b->output(0)));
}

TEST_F(NetParamsFile, LoadRejectsMissingAndMismatchedParametersAndChangesNothing) {
  auto net = model("mlp", R"({"hidden": [8], "input_shape": [4]})");
  net->initialize(1);
  const auto before = to_vector(net->parameters()[0].value);
  auto ctx = net->context();
  const auto weight = [&](const Shape& shape) { return core::NDArray::zeros(ctx, core::DType::kFloat32, shape); };

  const std::string missing = dir_ + "/missing.safetensors";
  core::save_safetensors(missing, {{"fc1.weight", weight(Shape{8, 4})}, {"fc1.bias", weight(Shape{8})}});
  auto e = error_of([&] { net->load_params(missing); });
  EXPECT_EQ(e.code, ErrorCode::kNotFound);
  EXPECT_NE(e.message.find("\"fc2.weight\""), std::string::npos) << e.message;

  const std::string wrong = dir_ + "/wrong.safetensors";
  core::save_safetensors(wrong, {{"fc1.weight", weight(Shape{8, 4})},
                                 {"fc1.bias", weight(Shape{8})},
                                 {"fc2.weight", weight(Shape{10, 9})},
                                 {"fc2.bias", weight(Shape{10})}});
  e = error_of([&] { net->load_params(wrong); });
  EXPECT_EQ(e.code, ErrorCode::kShapeMismatch);
  EXPECT_NE(e.message.find("\"fc2.weight\""), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("(10, 9)"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("(10, 8)"), std::string::npos) << e.message;

  const std::string dtype = dir_ + "/dtype.safetensors";
  core::save_safetensors(dtype, {{"fc1.weight", core::NDArray::zeros(ctx, core::DType::kFloat64, Shape{8, 4})},
                                 {"fc1.bias", weight(Shape{8})},
                                 {"fc2.weight", weight(Shape{10, 8})},
                                 {"fc2.bias", weight(Shape{10})}});
  EXPECT_EQ(error_of([&] { net->load_params(dtype); }).code, ErrorCode::kShapeMismatch);
  EXPECT_EQ(to_vector(net->parameters()[0].value), before) << "a failed load changes nothing";

  const std::string extra = dir_ + "/extra.safetensors";
  core::save_safetensors(extra, {{"fc1.weight", weight(Shape{8, 4})},
                                 {"fc1.bias", weight(Shape{8})},
                                 {"fc2.weight", weight(Shape{10, 8})},
                                 {"fc2.bias", weight(Shape{10})},
                                 {"other", weight(Shape{3})}});
  net->load_params(extra);
  for (float v : to_vector(net->parameters()[0].value)) EXPECT_EQ(v, 0.0f);
  EXPECT_EQ(error_of([&] { net->load_params(dir_ + "/absent.safetensors"); }).code, ErrorCode::kNotFound);
}

TEST(NetClone, GivesEqualOutputsAndIndependentParameters) {
  auto net = model("lenet", R"({"input_shape": [1, 16, 16]})");
  net->initialize(21);
  net->set_grad_req("fc2.bias", GradReq::kNull);
  auto copy = net->clone(core::make_cpu_context());
  EXPECT_NE(copy->context(), net->context());
  EXPECT_EQ(copy->description(), net->description());
  EXPECT_EQ(copy->parameters()[copy->param_index("fc2.bias")].grad_req, GradReq::kNull);
  const auto x = random_array(net->context(), Shape{5, 1, 16, 16}, 8);
  net->forward({x}, false);
  copy->forward({x}, false);
  EXPECT_EQ(to_vector(net->output(0)), to_vector(copy->output(0)));
  // The copy owns its values.
  ops::fill(copy->parameters()[0].value, 0.0);
  EXPECT_NE(to_vector(net->parameters()[0].value), to_vector(copy->parameters()[0].value));
}

TEST(NetInitialize, IsReproducibleFromTheSeed) {
  auto a = model("lenet");
  auto b = model("lenet");
  a->initialize(42);
  b->initialize(42);
  for (size_t i = 0; i < a->parameters().size(); ++i) {
    EXPECT_EQ(to_vector(a->parameters()[i].value), to_vector(b->parameters()[i].value));
  }
  b->initialize(43);
  EXPECT_NE(to_vector(a->parameters()[0].value), to_vector(b->parameters()[0].value));
}

TEST(NetContext, ThreadCountReachesTheEngine) {
  auto ctx = core::make_cpu_context();
  EXPECT_EQ(ctx->num_threads(), 0);
  ctx->set_num_threads(1);
  EXPECT_EQ(Net(build_model_description_from_text("mlp", ""), ctx).engine().num_threads(), 1);
  EXPECT_EQ(error_of([&] { ctx->set_num_threads(-1); }).code, ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace dt::nn
