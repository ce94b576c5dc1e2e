// Checkpointed optimizer state: a run resumed from state() continues bit-exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

#include "core/safetensors.h"
#include "optim/optimizer.h"
#include "optim_test_util.h"

namespace dt::optim {
namespace {

using core::ErrorCode;
using testing::error_of;

// Deterministic, varied values: no two steps see the same gradient.
core::NDArray filled(core::DType dtype, int64_t n, float seed) {
  std::vector<float> values;
  for (int64_t i = 0; i < n; ++i) values.push_back(std::sin(seed * 1.7f + static_cast<float>(i) * 0.37f) * 0.8f);
  if (dtype == core::DType::kFloat32) return testing::f32(values);
  return testing::half_array(dtype, values);
}

core::NDArray copy_of(const core::NDArray& src) {
  core::NDArray out = core::NDArray::empty(src.context(), src.dtype(), src.shape());
  out.copy_from(src);
  return out;
}

bool same_bits(const core::NDArray& a, const core::NDArray& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

std::string temp_path(const std::string& name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/dt_optim_" + std::to_string(::getpid()) + "_" + name;
}

struct Case {
  const char* label;
  OptimizerConfig config;
  core::DType dtype;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.label; }

class OptimizerStateTest : public ::testing::TestWithParam<Case> {};

TEST_P(OptimizerStateTest, ResumedRunContinuesBitExactly) {
  const Case& c = GetParam();
  auto original = Optimizer::create(c.config);
  const uint64_t keys[] = {0, 7, uint64_t{1} << 40};
  std::vector<core::NDArray> weights;
  for (size_t k = 0; k < 3; ++k) weights.push_back(filled(c.dtype, 5 + static_cast<int64_t>(k), 10.0f + k));
  // Uneven counts per key: 3, 2 and 1 updates.
  for (int step = 0; step < 3; ++step) {
    for (size_t k = 0; k < 3; ++k) {
      if (static_cast<int>(k) + step < 3) {
        original->update(keys[k], weights[k], filled(c.dtype, weights[k].shape()[0], step * 3.0f + k));
      }
    }
  }
  original->set_learning_rate(original->base_learning_rate() * 0.5);

  // Through a safetensors file, as a checkpoint travels.
  const std::string path = temp_path(std::string(c.label) + ".safetensors");
  core::NamedArrays saved = original->state("optimizer.");
  for (size_t k = 0; k < 3; ++k) saved.emplace_back("param." + std::to_string(k), weights[k]);
  core::save_safetensors(path, saved);
  const auto contents = core::load_safetensors(path, core::make_cpu_context());
  std::remove(path.c_str());

  auto resumed = Optimizer::create(c.config);
  resumed->load_state(contents.arrays, "optimizer.");
  EXPECT_EQ(resumed->num_update(), original->num_update());
  EXPECT_EQ(resumed->base_learning_rate(), original->base_learning_rate());
  EXPECT_EQ(resumed->learning_rate(), original->learning_rate());
  for (size_t k = 0; k < 3; ++k) EXPECT_EQ(resumed->update_count(keys[k]), original->update_count(keys[k]));

  // One more update on each key in both: identical bits, weights and state.
  for (size_t k = 0; k < 3; ++k) {
    core::NDArray resumed_weight = copy_of(weights[k]);
    const core::NDArray grad = filled(c.dtype, weights[k].shape()[0], 99.0f + k);
    original->update(keys[k], weights[k], grad);
    resumed->update(keys[k], resumed_weight, grad);
    EXPECT_TRUE(same_bits(weights[k], resumed_weight)) << c.label << " key " << keys[k];
  }
  const auto a = original->state("");
  const auto b = resumed->state("");
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_TRUE(same_bits(a[i].second, b[i].second)) << c.label << " " << a[i].first;
  }
}

// A server handing one part to another (a new replica): one key's state,
// loaded under another key number into an optimizer that holds other keys,
// continues that key bit-exactly and leaves the others alone.
TEST_P(OptimizerStateTest, OneKeysStateContinuesUnderAnotherKey) {
  const Case& c = GetParam();
  auto source = Optimizer::create(c.config);
  auto target = Optimizer::create(c.config);
  core::NDArray weight = filled(c.dtype, 6, 1.0f);
  for (int step = 0; step < 3; ++step) source->update(5, weight, filled(c.dtype, 6, 2.0f + step));
  core::NDArray other = filled(c.dtype, 4, 7.0f);
  target->update(1, other, filled(c.dtype, 4, 8.0f));
  const core::NamedArrays other_before = target->key_state(1);

  const core::NamedArrays handed = source->key_state(5);
  ASSERT_FALSE(handed.empty());
  EXPECT_EQ(handed.front().first, "step");
  target->load_key_state(40, handed);
  EXPECT_EQ(target->update_count(40), 3);
  EXPECT_EQ(target->num_update(), 3);
  EXPECT_TRUE(source->key_state(6).empty());

  core::NDArray copy = copy_of(weight);
  const core::NDArray grad = filled(c.dtype, 6, 30.0f);
  source->update(5, weight, grad);
  target->update(40, copy, grad);
  EXPECT_TRUE(same_bits(weight, copy)) << c.label;
  const auto a = source->key_state(5);
  const auto b = target->key_state(40);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(same_bits(a[i].second, b[i].second)) << a[i].first;
  const auto other_after = target->key_state(1);
  ASSERT_EQ(other_after.size(), other_before.size());
  for (size_t i = 0; i < other_after.size(); ++i) {
    EXPECT_TRUE(same_bits(other_after[i].second, other_before[i].second)) << other_after[i].first;
  }
  // A key's state missing a slot is refused and changes nothing.
  if (handed.size() > 1 && handed[1].first != "weight32") {
    core::NamedArrays partial = handed;
    partial.erase(partial.begin() + 1);
    EXPECT_EQ(error_of([&] { target->load_key_state(41, partial); }).code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(target->update_count(41), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Optim, OptimizerStateTest,
    ::testing::Values(
        Case{"sgd_plain", OptimizerConfig("sgd").set("wd", 0.01), core::DType::kFloat32},
        Case{"sgd_momentum", OptimizerConfig("sgd").set("momentum", 0.9).set("clip_gradient", 0.5),
             core::DType::kFloat32},
        Case{"nag_f16_mp", OptimizerConfig("nag").set("multi_precision", true), core::DType::kFloat16},
        Case{"adam_cosine",
             OptimizerConfig("adam").set("lr_scheduler", "cosine").set("max_update", 10).set("warmup_steps", 2),
             core::DType::kFloat32},
        Case{"adamw_bf16_mp", OptimizerConfig("adamw").set("multi_precision", true), core::DType::kBFloat16}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.label); });

class OptimizerStateErrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    source_ = Optimizer::create(OptimizerConfig("adam"));
    source_->update(3, testing::f32({1.0f, 2.0f}), testing::f32({0.5f, 0.5f}));
    target_ = Optimizer::create(OptimizerConfig("adam"));
    target_->update(9, testing::f32({1.0f}), testing::f32({1.0f}));
  }

  // load_state rejects `arrays` with kInvalidArgument naming `part`, and the
  // target keeps the state it had.
  void expect_rejected(const core::NamedArrays& arrays, const std::string& part) {
    const auto e = error_of([&] { target_->load_state(arrays, "opt."); });
    EXPECT_EQ(e.code, ErrorCode::kInvalidArgument) << e.message;
    EXPECT_NE(e.message.find(part), std::string::npos) << "message: " << e.message << "\nexpected: " << part;
    EXPECT_EQ(target_->update_count(9), 1);
    EXPECT_EQ(target_->update_count(3), 0);
  }

  core::NamedArrays without(const std::string& name) {
    core::NamedArrays out;
    for (const auto& entry : source_->state("opt.")) {
      if (entry.first != name) out.push_back(entry);
    }
    return out;
  }

  std::unique_ptr<Optimizer> source_;
  std::unique_ptr<Optimizer> target_;
};

TEST_F(OptimizerStateErrorTest, MissingEntries) {
  expect_rejected(without("opt.3.step"), "optimizer state 'opt.3.step': missing");
  expect_rejected(without("opt.3.var"), "optimizer state 'opt.3.var': missing");
  expect_rejected(without("opt.num_update"), "optimizer state 'opt.num_update': missing");
  expect_rejected(without("opt.learning_rate"), "optimizer state 'opt.learning_rate': missing");
}

TEST_F(OptimizerStateErrorTest, UnknownNamesAndWrongDtypes) {
  auto arrays = source_->state("opt.");
  arrays.emplace_back("opt.3.mom", testing::f32({0.0f, 0.0f}));
  expect_rejected(arrays, "optimizer 'adam' has no state 'mom'");

  arrays = source_->state("opt.");
  arrays.emplace_back("opt.x.mean", testing::f32({0.0f}));
  expect_rejected(arrays, "expected <key>.<slot>");

  arrays = source_->state("opt.");
  arrays.emplace_back("opt.99999999999999999999.mean", testing::f32({0.0f}));
  expect_rejected(arrays, "key does not fit in 64 bits");

  arrays = without("opt.3.step");
  arrays.emplace_back("opt.3.step", testing::f32({1.0f}));
  expect_rejected(arrays, "must be one I64 element, not F32");

  const auto cpu = core::make_cpu_context();
  arrays = without("opt.3.mean");
  arrays.emplace_back("opt.3.mean", core::NDArray::zeros(cpu, core::DType::kInt32, core::Shape({2})));
  expect_rejected(arrays, "must be F32 or F64, not I32");

  arrays = without("opt.3.step");
  arrays.emplace_back("opt.3.step", core::NDArray::zeros(cpu, core::DType::kInt64, core::Shape()));
  expect_rejected(arrays, "a key with state has at least one update");
}

TEST_F(OptimizerStateErrorTest, OtherPrefixesAreIgnored) {
  auto arrays = source_->state("opt.");
  arrays.emplace_back("param.0", testing::f32({1.0f}));
  arrays.emplace_back("other.3.mom", testing::f32({1.0f}));
  target_->load_state(arrays, "opt.");
  EXPECT_EQ(target_->update_count(3), 1);
  EXPECT_EQ(target_->update_count(9), 0);  // replaced, not merged
}

TEST_F(OptimizerStateErrorTest, LoadedStateMustFitTheWeight) {
  target_->load_state(source_->state("opt."), "opt.");
  const auto e = error_of([&] { target_->update(3, testing::f32({1.0f, 2.0f, 3.0f}), testing::f32({1, 1, 1})); });
  EXPECT_EQ(e.code, ErrorCode::kShapeMismatch);
  EXPECT_NE(e.message.find("key 3"), std::string::npos) << e.message;
  EXPECT_EQ(target_->update_count(3), 1);

  // Float32 moments cannot drive a float64 weight.
  const auto cpu = core::make_cpu_context();
  const auto w64 = core::NDArray::zeros(cpu, core::DType::kFloat64, core::Shape({2}));
  EXPECT_EQ(error_of([&] { target_->update(3, w64, w64); }).code, ErrorCode::kBadState);

  // A master copy is only for multi-precision 16-bit weights.
  auto mp = Optimizer::create(OptimizerConfig("adam").set("multi_precision", true));
  const auto half = testing::half_array(core::DType::kFloat16, {1.0f, 2.0f});
  mp->update(3, half, half);
  target_->load_state(mp->state("opt."), "opt.");
  EXPECT_EQ(error_of([&] { target_->update(3, half, half); }).code, ErrorCode::kBadState);
}

}  // namespace
}  // namespace dt::optim
