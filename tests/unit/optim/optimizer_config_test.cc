// The declarative config: JSON round trips and every validation error.
#include "optim/optimizer_config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "optim/optimizer.h"
#include "optim_test_util.h"

namespace dt::optim {
namespace {

using core::ErrorCode;
using testing::error_of;
using testing::f32;

// The error validate() raises: kInvalidArgument, and a message holding `part`.
// JSON has no NaN or infinity (they print as null), so such configs are only
// checked in memory: text_too = false.
void expect_invalid(const OptimizerConfig& config, const std::string& part, bool text_too = true) {
  const auto e = error_of([&] { config.validate(); });
  EXPECT_EQ(e.code, ErrorCode::kInvalidArgument) << e.message;
  EXPECT_NE(e.message.find(part), std::string::npos) << "message: " << e.message << "\nexpected: " << part;
  if (text_too) {
    // The same description arriving as text is rejected the same way.
    const auto from_text = error_of([&] { OptimizerConfig::from_json(config.to_json()); });
    EXPECT_EQ(from_text.message, e.message);
  }
  const auto at_create = error_of([&] { Optimizer::create(config); });
  EXPECT_EQ(at_create.message, e.message);
}

void expect_json_invalid(const std::string& text, const std::string& part) {
  const auto e = error_of([&] { OptimizerConfig::from_json(text); });
  EXPECT_EQ(e.code, ErrorCode::kInvalidArgument) << e.message;
  EXPECT_NE(e.message.find(part), std::string::npos) << "message: " << e.message << "\nexpected: " << part;
}

TEST(OptimizerConfigTest, JsonRoundTripKeepsTypesAndExactValues) {
  const auto config = OptimizerConfig("adamw")
                          .set("learning_rate", 0.1 + 0.2)  // 0.30000000000000004 must survive
                          .set("beta2", 0.98)
                          .set("wd", 1.0)                   // a double that looks like an integer
                          .set("multi_precision", true)
                          .set("lr_scheduler", "cosine")
                          .set("max_update", int64_t{1000})
                          .set("warmup_steps", 100);
  const std::string text = config.to_json();
  const OptimizerConfig back = OptimizerConfig::from_json(text);
  EXPECT_EQ(back, config) << text;
  EXPECT_EQ(back.name(), "adamw");
  EXPECT_TRUE(std::holds_alternative<double>(back.params().at("wd")));
  EXPECT_TRUE(std::holds_alternative<int64_t>(back.params().at("max_update")));
  EXPECT_EQ(back.get_number("learning_rate", 0.0), 0.1 + 0.2);
  EXPECT_EQ(back.to_json(), text);

  const auto multi = OptimizerConfig("sgd")
                         .set("lr_scheduler", "multifactor")
                         .set("steps", std::vector<int64_t>{10, 20, 30})
                         .set("factor", 0.1);
  EXPECT_EQ(OptimizerConfig::from_json(multi.to_json()), multi);
}

TEST(OptimizerConfigTest, HandWrittenJsonAcceptsIntegersForNumbers) {
  const auto config = OptimizerConfig::from_json(
      R"({"optimizer": "sgd", "learning_rate": 1, "momentum": 0.9, "lr_scheduler": "factor", "step": 5})");
  EXPECT_EQ(config.get_number("learning_rate", 0.0), 1.0);
  auto opt = Optimizer::create(config);
  EXPECT_EQ(opt->base_learning_rate(), 1.0);
}

TEST(OptimizerConfigTest, CreateBuildsEveryKnownOptimizerWithItsDefaults) {
  EXPECT_EQ(Optimizer::create(OptimizerConfig("sgd"))->base_learning_rate(), 0.1);
  EXPECT_EQ(Optimizer::create(OptimizerConfig("nag"))->base_learning_rate(), 0.1);
  EXPECT_EQ(Optimizer::create(OptimizerConfig("adam"))->base_learning_rate(), 0.001);
  EXPECT_EQ(Optimizer::create(OptimizerConfig("adamw"))->base_learning_rate(), 0.001);
  EXPECT_EQ(Optimizer::create(OptimizerConfig("adam"))->config().name(), "adam");
}

TEST(OptimizerConfigTest, UnknownNames) {
  expect_invalid(OptimizerConfig("adamm"), "unknown optimizer 'adamm'; known: sgd, nag, adam, adamw");
  expect_invalid(OptimizerConfig(""), "unknown optimizer ''");
  expect_invalid(OptimizerConfig("sgd").set("lerning_rate", 0.1),
                 "optimizer 'sgd': unknown hyper-parameter 'lerning_rate'; known: learning_rate, wd");
  expect_invalid(OptimizerConfig("sgd").set("beta1", 0.9), "optimizer 'sgd': unknown hyper-parameter 'beta1'");
  expect_invalid(OptimizerConfig("adam").set("momentum", 0.9), "optimizer 'adam': unknown hyper-parameter 'momentum'");
  expect_invalid(OptimizerConfig("nag").set("nesterov", false), "optimizer 'nag': unknown hyper-parameter 'nesterov'");
  expect_invalid(OptimizerConfig("sgd").set("lr_scheduler", "cosinus"),
                 "optimizer 'sgd': unknown lr_scheduler 'cosinus'; known: none, factor, multifactor, cosine, poly");
  expect_invalid(OptimizerConfig("sgd").set("max_update", 100),
                 "'max_update' is a parameter of lr_scheduler 'cosine', not of lr_scheduler 'none'");
  expect_invalid(OptimizerConfig("sgd").set("lr_scheduler", "cosine").set("max_update", 100).set("step", 10),
                 "'step' is a parameter of lr_scheduler 'factor', not of lr_scheduler 'cosine'");
}

TEST(OptimizerConfigTest, WrongTypes) {
  expect_invalid(OptimizerConfig("sgd").set("learning_rate", "fast"),
                 "optimizer 'sgd': 'learning_rate' must be a number, not a string");
  expect_invalid(OptimizerConfig("sgd").set("momentum", true), "'momentum' must be a number, not a boolean");
  expect_invalid(OptimizerConfig("sgd").set("nesterov", 1), "'nesterov' must be a boolean, not an integer");
  expect_invalid(OptimizerConfig("adam").set("multi_precision", "yes"), "'multi_precision' must be a boolean");
  expect_invalid(OptimizerConfig("sgd").set("warmup_steps", 1.5), "'warmup_steps' must be an integer, not a number");
  expect_invalid(OptimizerConfig("sgd").set("lr_scheduler", 3), "'lr_scheduler' must be a string, not an integer");
  expect_invalid(OptimizerConfig("sgd").set("lr_scheduler", "multifactor").set("steps", 10),
                 "'steps' must be a list of integers, not an integer");
  expect_invalid(OptimizerConfig("sgd").set("wd", std::vector<int64_t>{1}),
                 "'wd' must be a number, not a list of integers");
}

TEST(OptimizerConfigTest, OutOfRangeValues) {
  expect_invalid(OptimizerConfig("sgd").set("learning_rate", -0.1), "'learning_rate' = -0.10000000000000001 is outside [0, inf)");
  expect_invalid(OptimizerConfig("sgd").set("learning_rate", std::nan("")), "'learning_rate' must be finite",
                 false);
  expect_invalid(OptimizerConfig("sgd").set("learning_rate", std::numeric_limits<double>::infinity()),
                 "'learning_rate' must be finite", false);
  expect_invalid(OptimizerConfig("sgd").set("momentum", 1.0), "'momentum' = 1 is outside [0, 1)");
  expect_invalid(OptimizerConfig("nag").set("momentum", -0.5), "'momentum' = -0.5 is outside [0, 1)");
  expect_invalid(OptimizerConfig("sgd").set("wd", -1e-4), "'wd' = -0.0001 is outside [0, inf)");
  expect_invalid(OptimizerConfig("sgd").set("rescale_grad", 0.0), "'rescale_grad' = 0 is outside (0, inf)");
  expect_invalid(OptimizerConfig("adam").set("beta1", 1.0), "optimizer 'adam': 'beta1' = 1 is outside [0, 1)");
  expect_invalid(OptimizerConfig("adamw").set("beta2", -0.5), "optimizer 'adamw': 'beta2' = -0.5 is outside [0, 1)");
  expect_invalid(OptimizerConfig("adam").set("epsilon", 0.0), "'epsilon' = 0 is outside (0, inf)");
  expect_invalid(OptimizerConfig("adam").set("epsilon", -1e-8), "'epsilon' = -1e-08 is outside (0, inf)");
  expect_invalid(OptimizerConfig("sgd").set("warmup_steps", -1), "'warmup_steps' = -1 is outside [0, inf)");
  expect_invalid(OptimizerConfig("sgd").set("warmup_begin_lr", -1.0), "'warmup_begin_lr' = -1 is outside [0, inf)");
  expect_invalid(OptimizerConfig("sgd").set("lr_scheduler", "factor").set("step", 0),
                 "'step' = 0 is outside [1, inf)");
  expect_invalid(OptimizerConfig("sgd").set("lr_scheduler", "factor").set("step", 5).set("factor", 0.0),
                 "'factor' = 0 is outside (0, 1]");
  expect_invalid(OptimizerConfig("sgd").set("lr_scheduler", "factor").set("step", 5).set("factor", 1.5),
                 "'factor' = 1.5 is outside (0, 1]");
  expect_invalid(OptimizerConfig("sgd").set("lr_scheduler", "factor").set("step", 5).set("stop_factor_lr", -1.0),
                 "'stop_factor_lr' = -1 is outside [0, inf)");
  expect_invalid(OptimizerConfig("sgd").set("lr_scheduler", "poly").set("max_update", 10).set("power", 0.0),
                 "'power' = 0 is outside (0, inf)");
  expect_invalid(OptimizerConfig("sgd").set("lr_scheduler", "cosine").set("max_update", 10).set("final_lr", -1.0),
                 "'final_lr' = -1 is outside [0, inf)");
  expect_invalid(OptimizerConfig("sgd").set("lr_scheduler", "cosine").set("max_update", 0),
                 "'max_update' = 0 is outside [1, inf)");
}

TEST(OptimizerConfigTest, ScheduleConstraints) {
  expect_invalid(OptimizerConfig("sgd").set("lr_scheduler", "factor"), "lr_scheduler 'factor' needs 'step'");
  expect_invalid(OptimizerConfig("sgd").set("lr_scheduler", "multifactor"),
                 "lr_scheduler 'multifactor' needs 'steps'");
  expect_invalid(OptimizerConfig("sgd").set("lr_scheduler", "cosine"), "lr_scheduler 'cosine' needs 'max_update'");
  expect_invalid(OptimizerConfig("sgd").set("lr_scheduler", "poly"), "lr_scheduler 'poly' needs 'max_update'");
  expect_invalid(OptimizerConfig("sgd").set("lr_scheduler", "multifactor").set("steps", std::vector<int64_t>{}),
                 "'steps' must not be empty");
  expect_invalid(OptimizerConfig("sgd").set("lr_scheduler", "multifactor").set("steps", std::vector<int64_t>{5, 5}),
                 "'steps' must be strictly increasing, found 5 then 5");
  expect_invalid(OptimizerConfig("sgd").set("lr_scheduler", "multifactor").set("steps", std::vector<int64_t>{0, 5}),
                 "'steps' must be >= 1, found 0");
  expect_invalid(
      OptimizerConfig("sgd").set("lr_scheduler", "cosine").set("max_update", 100).set("warmup_steps", 100),
      "'max_update' = 100 must exceed 'warmup_steps' = 100");
}

TEST(OptimizerConfigTest, MalformedJson) {
  expect_json_invalid("{\"optimizer\": \"sgd\",", "optimizer config is not valid JSON");
  expect_json_invalid("[1, 2]", "optimizer config must be a JSON object");
  expect_json_invalid("{\"learning_rate\": 0.1}", "needs an \"optimizer\" name string");
  expect_json_invalid("{\"optimizer\": 3}", "needs an \"optimizer\" name string");
  expect_json_invalid(R"({"optimizer": "sgd", "momentum": null})", "'momentum' holds null");
  expect_json_invalid(R"({"optimizer": "sgd", "momentum": {"v": 1}})", "'momentum' holds object");
  expect_json_invalid(R"({"optimizer": "sgd", "lr_scheduler": "multifactor", "steps": [1.5]})", "'steps' holds array");
  expect_json_invalid(R"({"optimizer": "sgd", "warmup_steps": 18446744073709551615})",
                      "'warmup_steps' does not fit in a 64-bit integer");
  expect_json_invalid(R"({"optimizer": "adamm"})", "unknown optimizer 'adamm'");
  expect_json_invalid(R"({"optimizer": "sgd", "momentum": 2})", "'momentum' = 2 is outside [0, 1)");
}

TEST(OptimizerConfigTest, SettersRejectBadValues) {
  auto opt = Optimizer::create(OptimizerConfig("sgd"));
  EXPECT_EQ(error_of([&] { opt->set_learning_rate(-1.0); }).code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(error_of([&] { opt->set_learning_rate(std::nan("")); }).code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(error_of([&] { opt->set_rescale_grad(0.0); }).code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(error_of([&] { opt->set_rescale_grad(-2.0); }).code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(opt->base_learning_rate(), 0.1);
  EXPECT_EQ(opt->rescale_grad(), 1.0);
}

TEST(OptimizerConfigTest, UpdateArgumentErrors) {
  auto opt = Optimizer::create(OptimizerConfig("sgd").set("momentum", 0.5));
  const auto cpu = core::make_cpu_context();
  const core::NDArray w = f32({1.0f, 2.0f});
  EXPECT_EQ(error_of([&] { opt->update(0, w, f32({1.0f})); }).code, ErrorCode::kShapeMismatch);
  EXPECT_EQ(error_of([&] { opt->update(0, w, core::NDArray::zeros(cpu, core::DType::kFloat64, core::Shape({2}))); })
                .code,
            ErrorCode::kDtypeMismatch);
  EXPECT_EQ(error_of([&] { opt->update(0, w, core::NDArray()); }).code, ErrorCode::kInvalidArgument);
  const auto ints = core::NDArray::zeros(cpu, core::DType::kInt32, core::Shape({2}));
  const auto e = error_of([&] { opt->update(0, ints, ints); });
  EXPECT_EQ(e.code, ErrorCode::kNotSupported);
  EXPECT_NE(e.message.find("I32"), std::string::npos) << e.message;
  // Failed updates leave no trace.
  EXPECT_EQ(opt->update_count(0), 0);
  EXPECT_EQ(opt->num_update(), 0);
  EXPECT_EQ(opt->state("").size(), 2u);
  // A key's shape is fixed by its first update.
  opt->update(0, w, f32({1.0f, 1.0f}));
  EXPECT_EQ(error_of([&] { opt->update(0, f32({1.0f}), f32({1.0f})); }).code, ErrorCode::kShapeMismatch);
  EXPECT_EQ(opt->update_count(0), 1);
}

}  // namespace
}  // namespace dt::optim
