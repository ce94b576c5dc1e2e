// dt_net_* and the context's thread count: networks, their parameters,
// forward and backward. A net, like an array, is used by one thread at a time.
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "c_api/api_guard.h"
#include "c_api/buffer_out.h"
#include "c_api/handles.h"
#include "c_api/options.h"
#include "core/dtype.h"
#include "dt_c_api.h"
#include "nn/model_builders.h"
#include "nn/net.h"

using dt::c_api::arg;
using dt::c_api::guarded;
using dt::c_api::handle;
using dt::core::Error;
using dt::core::ErrorCode;

static_assert(static_cast<int>(dt::nn::GradReq::kNull) == DT_GRAD_NULL, "grad_req values");
static_assert(static_cast<int>(dt::nn::GradReq::kWrite) == DT_GRAD_WRITE, "grad_req values");
static_assert(static_cast<int>(dt::nn::GradReq::kAdd) == DT_GRAD_ADD, "grad_req values");

namespace {

dt::nn::Net& net_of(const dt_net* net) { return *handle(net, "net").impl; }

size_t checked_index(const dt::nn::Net& net, size_t index) {
  const size_t count = net.parameters().size();
  if (index >= count) {
    throw Error(ErrorCode::kInvalidArgument,
                "index " + std::to_string(index) + " is outside the " + std::to_string(count) + " parameters");
  }
  return index;
}

// A dt_dtype value the header defines; what the net makes of it is the
// net's to say (Net::set_compute_dtype).
dt::core::DType checked_compute_dtype(const dt_dtype& dtype) {
  const int value = dt::c_api::raw_enum(dtype);
  if (!dt::core::is_valid_dtype(value)) {
    throw Error(ErrorCode::kInvalidArgument, "unknown dtype value " + std::to_string(value));
  }
  return static_cast<dt::core::DType>(value);
}

dt::nn::GradReq checked_grad_req(const dt_grad_req& req) {
  const int value = dt::c_api::raw_enum(req);
  if (value < DT_GRAD_NULL || value > DT_GRAD_ADD) {
    throw Error(ErrorCode::kInvalidArgument, "unknown grad_req value " + std::to_string(value));
  }
  return static_cast<dt::nn::GradReq>(value);
}

void loss_scaling_defaults(dt_loss_scaling_options* options) {
  const dt::nn::LossScalerOptions defaults;
  options->enabled = 1;
  options->init_scale = defaults.init_scale;
  options->growth_factor = defaults.growth_factor;
  options->backoff_factor = defaults.backoff_factor;
  options->growth_interval = defaults.growth_interval;
}

}  // namespace

extern "C" {

dt_status dt_context_set_num_threads(dt_context* ctx, int32_t num_threads) {
  return guarded(__func__, [&] { handle(ctx, "ctx").impl->set_num_threads(num_threads); });
}

dt_status dt_context_num_threads(int32_t* out, const dt_context* ctx) {
  return guarded(__func__, [&] {
    arg(out, "out");
    *out = handle(ctx, "ctx").impl->num_threads();
  });
}

dt_status dt_net_create(dt_net** out, const dt_context* ctx, const char* builder, const char* options_json) {
  return guarded(__func__, [&] {
    arg(out, "out");
    const auto& context = handle(ctx, "ctx").impl;
    arg(builder, "builder");
    auto description = dt::nn::build_model_description_from_text(builder, options_json != nullptr ? options_json : "");
    auto net = std::make_unique<dt::nn::Net>(std::move(description), context);
    *out = dt::c_api::new_handle<dt_net>(std::move(net));
  });
}

dt_status dt_net_create_from_json(dt_net** out, const dt_context* ctx, const char* description_json) {
  return guarded(__func__, [&] {
    arg(out, "out");
    const auto& context = handle(ctx, "ctx").impl;
    arg(description_json, "description_json");
    *out = dt::c_api::new_handle<dt_net>(dt::nn::net_from_json(description_json, context));
  });
}

void dt_net_free(dt_net* net) { dt::c_api::free_handle(net, __func__); }

dt_status dt_net_to_json(char* buf, size_t capacity, size_t* out_length, const dt_net* net) {
  return guarded(__func__, [&] {
    arg(out_length, "out_length");
    dt::c_api::write_string_out(buf, capacity, out_length, net_of(net).to_json());
  });
}

dt_status dt_net_initialize(dt_net* net, uint64_t seed) {
  return guarded(__func__, [&] { net_of(net).initialize(seed); });
}

dt_status dt_net_num_params(size_t* out, const dt_net* net) {
  return guarded(__func__, [&] {
    arg(out, "out");
    *out = net_of(net).parameters().size();
  });
}

dt_status dt_net_param_name(const char** out, const dt_net* net, size_t index) {
  return guarded(__func__, [&] {
    arg(out, "out");
    const auto& n = net_of(net);
    *out = n.parameters()[checked_index(n, index)].name.c_str();
  });
}

dt_status dt_net_param_is_auxiliary(int32_t* out, const dt_net* net, size_t index) {
  return guarded(__func__, [&] {
    arg(out, "out");
    const auto& n = net_of(net);
    *out = n.parameters()[checked_index(n, index)].auxiliary ? 1 : 0;
  });
}

dt_status dt_net_find_param(size_t* out_index, const dt_net* net, const char* name) {
  return guarded(__func__, [&] {
    arg(out_index, "out_index");
    const auto& n = net_of(net);
    arg(name, "name");
    *out_index = n.param_index(name);
  });
}

dt_status dt_net_param(dt_ndarray** out, const dt_net* net, size_t index) {
  return guarded(__func__, [&] {
    arg(out, "out");
    const auto& n = net_of(net);
    *out = dt::c_api::new_handle<dt_ndarray>(n.parameters()[checked_index(n, index)].value);
  });
}

dt_status dt_net_grad(dt_ndarray** out, const dt_net* net, size_t index) {
  return guarded(__func__, [&] {
    arg(out, "out");
    const auto& n = net_of(net);
    const auto& param = n.parameters()[checked_index(n, index)];
    if (param.auxiliary) {
      throw Error(ErrorCode::kNotFound, "\"" + param.name + "\" is an auxiliary state and has no gradient");
    }
    *out = dt::c_api::new_handle<dt_ndarray>(param.grad);
  });
}

dt_status dt_net_set_grad_req(dt_net* net, const char* name, dt_grad_req req) {
  return guarded(__func__, [&] {
    auto& n = net_of(net);
    const dt::nn::GradReq value = checked_grad_req(req);
    if (name == nullptr) {
      n.set_grad_req(value);
    } else {
      n.set_grad_req(name, value);
    }
  });
}

dt_status dt_net_forward(dt_net* net, const dt_ndarray* const* inputs, size_t num_inputs, int32_t train_mode) {
  return guarded(__func__, [&] {
    auto& n = net_of(net);
    if (num_inputs > 0) arg(inputs, "inputs");
    if (train_mode != 0 && train_mode != 1) {
      throw Error(ErrorCode::kInvalidArgument, "train_mode must be 0 or 1, not " + std::to_string(train_mode));
    }
    std::vector<dt::core::NDArray> arrays;
    arrays.reserve(num_inputs);
    for (size_t i = 0; i < num_inputs; ++i) {
      arrays.push_back(handle(inputs[i], ("inputs[" + std::to_string(i) + "]").c_str()).impl);
    }
    n.forward(arrays, train_mode == 1);
  });
}

dt_status dt_net_backward(double* out_loss, dt_net* net, const dt_ndarray* labels) {
  return guarded(__func__, [&] {
    auto& n = net_of(net);
    const double loss = n.backward(handle(labels, "labels").impl);
    if (out_loss != nullptr) *out_loss = loss;
  });
}

dt_status dt_net_num_outputs(size_t* out, const dt_net* net) {
  return guarded(__func__, [&] {
    arg(out, "out");
    *out = net_of(net).num_outputs();
  });
}

dt_status dt_net_output(dt_ndarray** out, const dt_net* net, size_t index) {
  return guarded(__func__, [&] {
    arg(out, "out");
    *out = dt::c_api::new_handle<dt_ndarray>(net_of(net).output(index));
  });
}

dt_status dt_net_save_params(const dt_net* net, const char* path) {
  return guarded(__func__, [&] {
    const auto& n = net_of(net);
    n.save_params(arg(path, "path"));
  });
}

dt_status dt_net_load_params(dt_net* net, const char* path) {
  return guarded(__func__, [&] {
    auto& n = net_of(net);
    n.load_params(arg(path, "path"));
  });
}

dt_status dt_net_set_compute_dtype(dt_net* net, dt_dtype dtype) {
  return guarded(__func__, [&] {
    auto& n = net_of(net);
    n.set_compute_dtype(checked_compute_dtype(dtype));
  });
}

dt_status dt_net_compute_dtype(dt_dtype* out, const dt_net* net) {
  return guarded(__func__, [&] {
    arg(out, "out");
    *out = static_cast<dt_dtype>(net_of(net).compute_dtype());
  });
}

dt_status dt_net_loss_scale(double* out, const dt_net* net) {
  return guarded(__func__, [&] {
    arg(out, "out");
    *out = net_of(net).loss_scaler().scale();
  });
}

dt_status dt_loss_scaling_options_init(dt_loss_scaling_options* options, size_t struct_size) {
  return guarded(__func__,
                 [&] { dt::c_api::init_struct(options, struct_size, loss_scaling_defaults, "options"); });
}

dt_status dt_net_set_loss_scaling(dt_net* net, const dt_loss_scaling_options* options) {
  return guarded(__func__, [&] {
    auto& n = net_of(net);
    const dt_loss_scaling_options given =
        dt::c_api::read_struct(arg(options, "options"), loss_scaling_defaults, "options");
    if (given.enabled == 0) {
      n.set_loss_scaler(dt::nn::LossScaler());
      return;
    }
    dt::nn::LossScalerOptions o;
    o.init_scale = given.init_scale;
    o.growth_factor = given.growth_factor;
    o.backoff_factor = given.backoff_factor;
    o.growth_interval = given.growth_interval;
    // The scaler names a bad field; the net refuses scaling in float32.
    n.set_loss_scaler(dt::nn::LossScaler(o));
  });
}

dt_status dt_net_loss_scaling(dt_loss_scaling_options* out, const dt_net* net) {
  return guarded(__func__, [&] {
    const dt::nn::LossScaler& scaler = net_of(net).loss_scaler();
    const dt::nn::LossScalerOptions& o = scaler.options();
    dt_loss_scaling_options value;
    dt::c_api::fill_defaults(&value, loss_scaling_defaults);
    value.enabled = scaler.enabled() ? 1 : 0;
    value.init_scale = o.init_scale;
    value.growth_factor = o.growth_factor;
    value.backoff_factor = o.backoff_factor;
    value.growth_interval = o.growth_interval;
    dt::c_api::write_struct(out, value, "out");
  });
}

}  // extern "C"
