#include "kvstore/local_kvstore.h"

#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "core/error.h"
#include "error_code_of.h"
#include "kvstore/kvstore_factory.h"

namespace dt::kvstore {
namespace {

using core::DType;
using core::Error;
using core::ErrorCode;
using core::NDArray;
using core::Shape;
using test_support::code_of;

class LocalKVStoreTest : public ::testing::Test {
 protected:
  NDArray array(std::vector<float> values) {
    NDArray a = NDArray::empty(cpu_, DType::kFloat32, Shape({static_cast<int64_t>(values.size())}));
    a.copy_from_host(values.data(), values.size() * sizeof(float));
    return a;
  }
  static std::vector<float> values(const NDArray& a) {
    std::vector<float> out(a.size());
    a.copy_to_host(out.data(), out.size() * sizeof(float));
    return out;
  }

  std::shared_ptr<core::Context> cpu_ = core::make_cpu_context();
  LocalKVStore store_{LocalKVStore::Reduce::kOnCpu};
};

TEST_F(LocalKVStoreTest, PushSumsValuesOfOneKeyAndPullBroadcasts) {
  store_.init({3}, {array({0, 0})});
  store_.push({3, 3, 3}, {array({1, 2}), array({10, 20}), array({100, 200})}, 0);
  NDArray out1 = array({-1, -1});
  NDArray out2 = array({-1, -1});
  store_.pull({3, 3}, {out1, out2}, 0);
  EXPECT_EQ(values(out1), (std::vector<float>{111, 222}));
  EXPECT_EQ(values(out2), (std::vector<float>{111, 222}));
  // Without an optimizer a push replaces the stored value, as in MXNet.
  store_.push({3}, {array({5, 6})}, 0);
  store_.pull({3}, {out1}, 0);
  EXPECT_EQ(values(out1), (std::vector<float>{5, 6}));
}

TEST_F(LocalKVStoreTest, SeveralKeysInOneCall) {
  store_.init({1, 2}, {array({1}), array({2, 2})});
  NDArray a = array({0});
  NDArray b = array({0, 0});
  store_.pushpull({2, 1, 2}, {array({1, 1}), array({7}), array({3, 3})}, {b, a, b}, 0);
  EXPECT_EQ(values(a), (std::vector<float>{7}));
  EXPECT_EQ(values(b), (std::vector<float>{4, 4}));
}

TEST_F(LocalKVStoreTest, OptimizerOnTheStoreAppliesSummedGradients) {
  store_.init({0}, {array({1.0f, 2.0f})});
  store_.set_optimizer(optim::OptimizerConfig("sgd").set("learning_rate", 0.5));
  ASSERT_TRUE(store_.has_optimizer());
  store_.push({0, 0}, {array({0.25f, 1.0f}), array({0.75f, 1.0f})}, 0);  // sum (1, 2)
  NDArray w = array({0, 0});
  store_.pull({0}, {w}, 0);
  EXPECT_EQ(values(w), (std::vector<float>{0.5f, 1.0f}));  // w - 0.5 * sum
  store_.set_learning_rate(1.0);
  store_.push({0}, {array({0.5f, 0.5f})}, 0);
  store_.pull({0}, {w}, 0);
  EXPECT_EQ(values(w), (std::vector<float>{0.0f, 0.5f}));
}

TEST_F(LocalKVStoreTest, BroadcastInitialisesFromTheFirstValue) {
  NDArray out1 = array({0, 0});
  NDArray out2 = array({0, 0});
  store_.broadcast({9, 9}, {array({4, 5}), array({7, 7})}, {out1, out2});
  EXPECT_EQ(values(out1), (std::vector<float>{4, 5}));
  EXPECT_EQ(values(out2), (std::vector<float>{4, 5}));
}

TEST_F(LocalKVStoreTest, ClearErrorsForBadUse) {
  store_.init({1}, {array({1, 2})});
  EXPECT_EQ(code_of([&] { store_.init({1}, {array({1, 2})}); }), ErrorCode::kBadState);
  EXPECT_EQ(code_of([&] { store_.push({2}, {array({1, 2})}, 0); }), ErrorCode::kNotFound);
  EXPECT_EQ(code_of([&] { store_.pull({2}, {array({1, 2})}, 0); }), ErrorCode::kNotFound);
  EXPECT_EQ(code_of([&] { store_.push({1}, {array({1, 2, 3})}, 0); }), ErrorCode::kShapeMismatch);
  EXPECT_EQ(code_of([&] { store_.pull({1}, {array({1})}, 0); }), ErrorCode::kShapeMismatch);
  EXPECT_EQ(code_of([&] { store_.push({1, 1}, {array({1, 2})}, 0); }), ErrorCode::kInvalidArgument);
  NDArray ints = NDArray::zeros(cpu_, DType::kInt32, Shape({2}));
  EXPECT_EQ(code_of([&] { store_.push({1}, {ints}, 0); }), ErrorCode::kDtypeMismatch);
  EXPECT_EQ(code_of([&] { store_.set_learning_rate(0.1); }), ErrorCode::kBadState);
  EXPECT_EQ(code_of([&] { store_.set_optimizer(optim::OptimizerConfig("adamm")); }), ErrorCode::kInvalidArgument);
  // A push that fails its checks changes nothing, even for the keys before the bad one.
  store_.init({5}, {array({0})});
  EXPECT_EQ(code_of([&] { store_.push({5, 1}, {array({9}), array({1})}, 0); }), ErrorCode::kShapeMismatch);
  NDArray out = array({-1});
  store_.pull({5}, {out}, 0);
  EXPECT_EQ(values(out), (std::vector<float>{0}));
}

TEST(KVStoreFactoryTest, MxnetNamesCaseInsensitive) {
  EXPECT_EQ(canonical_kvstore_type("dist"), "dist_sync");
  EXPECT_EQ(canonical_kvstore_type("Dist_Sync"), "dist_sync");
  EXPECT_EQ(canonical_kvstore_type("dist_device_sync"), "dist_sync_device");
  EXPECT_EQ(canonical_kvstore_type("DIST_ASYNC_DEVICE"), "dist_async_device");
  EXPECT_EQ(canonical_kvstore_type("dist_device_async"), "dist_async_device");
  EXPECT_EQ(canonical_kvstore_type("local_allreduce_device"), "device");
  EXPECT_EQ(canonical_kvstore_type("local_update_cpu"), "local");
  EXPECT_EQ(create_kvstore("LOCAL")->type(), "local");
}

TEST(KVStoreFactoryTest, TypesAndErrors) {
  EXPECT_EQ(create_kvstore("local")->type(), "local");
  try {
    create_kvstore("locale");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("dist_device_sync"), std::string::npos) << e.what();
  }
  if (core::gpu_count() == 0) {
    try {
      create_kvstore("device");
      FAIL() << "device kvstore without a GPU";
    } catch (const Error& e) {
      EXPECT_TRUE(e.code() == ErrorCode::kNoDevice || e.code() == ErrorCode::kNotSupported) << e.what();
    }
  }
}

TEST(KVStoreGroupKeysTest, FirstAppearanceOrder) {
  const auto groups = group_keys({7, 3, 7, 1, 3});
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].key, 7u);
  EXPECT_EQ(groups[0].positions, (std::vector<size_t>{0, 2}));
  EXPECT_EQ(groups[1].positions, (std::vector<size_t>{1, 4}));
  EXPECT_EQ(groups[2].positions, (std::vector<size_t>{3}));
}

}  // namespace
}  // namespace dt::kvstore
