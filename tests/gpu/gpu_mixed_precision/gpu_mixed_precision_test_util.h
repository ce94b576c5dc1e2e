// What the mixed-precision GPU tests share: their includes and the GPU test
// helpers they use. The tolerances and why: gpu_mixed_precision_test.cc.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/cuda/gpu_context.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/ndarray.h"
#include "data/batch_loader.h"
#include "data/mnist_dataset.h"
#include "data/split_sampler.h"
#include "gpu/gpu_test_util.h"
#include "kvstore/kvstore_factory.h"
#include "nn/layer.h"
#include "nn/model_builders.h"
#include "nn/net.h"
#include "ops/cuda/gradient_cast.h"
#include "ops/tensor_math.h"
#include "optim/optimizer_config.h"
#include "train/trainer.h"

namespace dt::gpu_mixed_precision_test {

using core::DType;
using core::NDArray;
using core::Shape;

using gpu_test::array_of;
using gpu_test::expect_close_in_max_norm;
using gpu_test::host_floats;
using gpu_test::kFashionMnist;
using gpu_test::random_values;

}  // namespace dt::gpu_mixed_precision_test
