#include "nn/compute_parameters.h"

#include <string>

#include "core/error.h"
#include "ops/tensor_math.h"
#if DT_WITH_CUDA
#include "ops/cuda/gradient_cast.h"
#endif

namespace dt::nn {

using core::Error;
using core::ErrorCode;

ComputeParameters::ComputeParameters(std::vector<Parameter>& masters, const std::vector<bool>& in_compute_dtype,
                                     core::DType dtype)
    : masters_(masters), in_compute_dtype_(in_compute_dtype), dtype_(dtype) {
  if (dtype != core::DType::kFloat16 && dtype != core::DType::kBFloat16) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string("mixed precision computes in float16 or bfloat16, not ") + core::dtype_name(dtype));
  }
  if (in_compute_dtype_.size() != masters_.size()) {
    throw Error(ErrorCode::kInternal, "mixed precision: one in_compute_dtype flag per parameter expected");
  }
#if !DT_WITH_CUDA
  throw Error(ErrorCode::kNotSupported, "mixed precision needs a GPU, and this build has no CUDA");
#endif
  views_.reserve(masters_.size());
  for (size_t i = 0; i < masters_.size(); ++i) {
    const Parameter& master = masters_[i];
    if (master.value.context()->is_cpu()) {
      throw Error(ErrorCode::kNotSupported, "mixed precision runs on GPU contexts only; parameter '" + master.name +
                                                "' is on " + master.value.context()->to_string());
    }
    Parameter view;
    view.name = master.name;
    view.auxiliary = master.auxiliary;
    view.init = master.init;
    if (master.auxiliary) {
      view.value = master.value;
      view.grad_req = GradReq::kNull;
    } else {
      const core::DType view_dtype = in_compute_dtype_[i] ? dtype_ : core::DType::kFloat32;
      const auto& ctx = master.value.context();
      view.value = in_compute_dtype_[i] ? core::NDArray::empty(ctx, dtype_, master.value.shape()) : master.value;
      // Never the master's gradient, even in float32: that one receives
      // the unscaled (and, for kAdd, accumulated) result.
      view.grad = core::NDArray::zeros(ctx, view_dtype, master.value.shape());
    }
    views_.push_back(std::move(view));
  }
  sync_grad_reqs();
}

void ComputeParameters::refresh_values() {
  for (size_t i = 0; i < masters_.size(); ++i) {
    if (in_compute_dtype_[i] && !masters_[i].auxiliary) ops::cast(views_[i].value, masters_[i].value);
  }
}

void ComputeParameters::sync_grad_reqs() {
  for (size_t i = 0; i < masters_.size(); ++i) {
    if (masters_[i].auxiliary) continue;
    views_[i].grad_req = masters_[i].grad_req == GradReq::kNull ? GradReq::kNull : GradReq::kWrite;
  }
}

void ComputeParameters::finish_gradient(size_t index, float scale) {
  Parameter& master = masters_.at(index);
  if (master.auxiliary || master.grad_req == GradReq::kNull) return;
  const Parameter& view = views_[index];
#if DT_WITH_CUDA
  ops::cuda::cast_gradient(*master.grad.context(), view.grad.dtype(), view.grad.data(), master.grad.data_as<float>(),
                           master.grad.size(), scale, master.grad_req == GradReq::kAdd);
#else
  static_cast<void>(view);
  static_cast<void>(scale);
  throw Error(ErrorCode::kNotSupported, "mixed precision needs a GPU, and this build has no CUDA");
#endif
}

}  // namespace dt::nn
