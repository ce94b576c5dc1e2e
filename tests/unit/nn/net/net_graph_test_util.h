// What the net graph tests share: a one-thread CPU context, and nets from a
// description or a model builder on it.
#pragma once

#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "core/safetensors.h"
#include "nn/model_builders.h"
#include "nn/net.h"
#include "nn/net_description.h"
#include "ops/cpu/cpu_engine.h"
#include "ops/tensor_math.h"
#include "net_test_util.h"

namespace dt::nn::net_graph_test {

using core::ErrorCode;
using core::Shape;
using testing::error_of;
using testing::labels_array;
using testing::random_array;
using testing::to_vector;

inline std::shared_ptr<core::Context> cpu() {
  auto ctx = core::make_cpu_context();
  // These nets are small, and the suite may share its cores with other
  // work: one thread spares the OpenMP barriers that stall on a busy machine.
  ctx->set_num_threads(1);
  return ctx;
}

inline std::unique_ptr<Net> net_of(const std::string& json) { return net_from_json(json, cpu()); }

inline std::unique_ptr<Net> model(const std::string& builder, const std::string& options = "") {
  return std::make_unique<Net>(build_model_description_from_text(builder, options), cpu());
}

}  // namespace dt::nn::net_graph_test
