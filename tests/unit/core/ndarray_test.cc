#include "core/ndarray.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/error.h"
#include "error_code_of.h"
#include "ops/tensor_math.h"

namespace dt::core {
namespace {

using dt::test_support::code_of;

TEST(ShapeTest, CountsAndOverflow) {
  EXPECT_EQ(Shape().numel(), 1);
  EXPECT_EQ(Shape({2, 3, 4}).numel(), 24);
  EXPECT_EQ(Shape({5, 0, 7}).numel(), 0);
  EXPECT_EQ(Shape({2, 3}).to_string(), "(2, 3)");
  EXPECT_EQ(code_of([] { Shape({-1, 2}); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([] { Shape({INT64_MAX, 2}); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([] { Shape({int64_t{1} << 40, int64_t{1} << 40}); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([] { Shape({0, INT64_MAX, 2}); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([] { Shape({int64_t{1} << 62}).nbytes(8); }), ErrorCode::kInvalidArgument);
  const std::vector<int64_t> nine(9, 1);
  EXPECT_EQ(code_of([&] { Shape(nine.data(), nine.size()); }), ErrorCode::kInvalidArgument);
}

TEST(ShapeTest, InferReshape) {
  const int64_t dims[] = {3, -1};
  EXPECT_EQ(infer_reshape(dims, 2, 12), Shape({3, 4}));
  const int64_t two_unknown[] = {-1, -1};
  EXPECT_EQ(code_of([&] { infer_reshape(two_unknown, 2, 12); }), ErrorCode::kInvalidArgument);
  const int64_t not_dividing[] = {5, -1};
  EXPECT_EQ(code_of([&] { infer_reshape(not_dividing, 2, 12); }), ErrorCode::kShapeMismatch);
  const int64_t wrong_count[] = {5, 2};
  EXPECT_EQ(code_of([&] { infer_reshape(wrong_count, 2, 12); }), ErrorCode::kShapeMismatch);
}

TEST(NDArrayTest, CpuStorageIsAlignedAndZeroed) {
  auto cpu = make_cpu_context();
  for (int64_t n : {1, 3, 17, 1000}) {
    NDArray a = NDArray::zeros(cpu, DType::kFloat64, Shape({n}));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % kCpuAlignment, 0u);
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(a.data_as<double>()[i], 0.0);
  }
}

TEST(NDArrayTest, ViewsShareStorageAndOutliveTheParent) {
  auto cpu = make_cpu_context();
  NDArray view;
  {
    NDArray a = NDArray::zeros(cpu, DType::kFloat32, Shape({4, 3}));
    std::vector<float> values(12);
    for (int i = 0; i < 12; ++i) values[i] = static_cast<float>(i);
    a.copy_from_host(values.data(), values.size() * sizeof(float));
    view = a.slice(1, 3).reshape(Shape({6}));
  }
  ASSERT_EQ(view.shape(), Shape({6}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(view.data_as<float>()[i], static_cast<float>(i + 3));
  EXPECT_EQ(view.slice(2, 2).size(), 0u);
  EXPECT_EQ(code_of([&] { view.slice(3, 2); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { view.slice(0, 7); }), ErrorCode::kInvalidArgument);
}

TEST(NDArrayTest, CopyChecksBytesShapeAndDtype) {
  auto cpu = make_cpu_context();
  NDArray a = NDArray::zeros(cpu, DType::kFloat32, Shape({2, 2}));
  NDArray b = NDArray::zeros(cpu, DType::kFloat32, Shape({4}));
  NDArray c = NDArray::zeros(cpu, DType::kInt32, Shape({2, 2}));
  float host[4] = {1, 2, 3, 4};
  EXPECT_EQ(code_of([&] { a.copy_from_host(host, 12); }), ErrorCode::kShapeMismatch);
  EXPECT_EQ(code_of([&] { a.copy_from(b); }), ErrorCode::kShapeMismatch);
  EXPECT_EQ(code_of([&] { a.copy_from(c); }), ErrorCode::kDtypeMismatch);
  a.copy_from_host(host, sizeof host);
  NDArray d = NDArray::empty(cpu, DType::kFloat32, Shape({2, 2}));
  d.copy_from(a);
  EXPECT_EQ(d.data_as<float>()[3], 4.0f);
}

TEST(TensorMathTest, ArithmeticPerFloatingDtype) {
  auto cpu = make_cpu_context();
  for (DType dtype : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
    NDArray x = NDArray::empty(cpu, dtype, Shape({5}));
    NDArray y = NDArray::empty(cpu, dtype, Shape({5}));
    NDArray out = NDArray::empty(cpu, DType::kFloat32, Shape({5}));
    ops::fill(x, 1.5);
    ops::fill(y, 2.0);
    ops::axpy(y, 2.0, x);  // 5
    ops::scale(y, 0.5);    // 2.5
    ops::add(y, y, x);     // 4
    ops::cast(out, y);
    for (int i = 0; i < 5; ++i) EXPECT_EQ(out.data_as<float>()[i], 4.0f) << dtype_name(dtype);
  }
}

TEST(TensorMathTest, IntegerRules) {
  auto cpu = make_cpu_context();
  NDArray i = NDArray::empty(cpu, DType::kInt32, Shape({3}));
  NDArray u = NDArray::empty(cpu, DType::kUInt8, Shape({3}));
  EXPECT_EQ(code_of([&] { ops::add(i, i, i); }), ErrorCode::kNotSupported);
  EXPECT_EQ(code_of([&] { ops::fill(u, 256); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { ops::fill(u, -1); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { ops::fill(i, std::nan("")); }), ErrorCode::kInvalidArgument);
  ops::fill(i, 2.6);
  EXPECT_EQ(i.data_as<int32_t>()[0], 3);
  NDArray f = NDArray::empty(cpu, DType::kFloat32, Shape({3}));
  float values[3] = {-2.7f, 1e20f, 300.0f};
  f.copy_from_host(values, sizeof values);
  ops::cast(i, f);
  EXPECT_EQ(i.data_as<int32_t>()[0], -2);
  EXPECT_EQ(i.data_as<int32_t>()[1], INT32_MAX);
  ops::cast(u, i);
  EXPECT_EQ(u.data_as<uint8_t>()[0], 0);
  EXPECT_EQ(u.data_as<uint8_t>()[2], 255);
}

}  // namespace
}  // namespace dt::core
