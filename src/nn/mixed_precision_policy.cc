#include "nn/mixed_precision_policy.h"

#include <string>

#include "core/error.h"

namespace dt::nn {

using core::Error;
using core::ErrorCode;

void MixedPrecisionPolicy::check_compute_dtype(core::DType dtype) {
  if (dtype != core::DType::kFloat32 && dtype != core::DType::kFloat16 && dtype != core::DType::kBFloat16) {
    throw Error(ErrorCode::kInvalidArgument, std::string("net: the compute dtype must be float32 (F32), float16 "
                                                         "(F16) or bfloat16 (BF16), got ") +
                                                 core::dtype_name(dtype));
  }
}

void MixedPrecisionPolicy::check_supported_on(core::DType dtype, const core::Context& ctx) {
  if (dtype != core::DType::kFloat32 && ctx.is_cpu()) {
    throw Error(ErrorCode::kNotSupported, std::string("net: ") + core::dtype_name(dtype) +
                                              " compute (mixed precision) runs on GPU contexts only; this net is on " +
                                              ctx.to_string());
  }
}

void MixedPrecisionPolicy::set_compute_dtype(core::DType dtype) {
  compute_dtype_ = dtype;
  loss_scaler_ = dtype == core::DType::kFloat16 ? LossScaler(LossScalerOptions{}) : LossScaler();
}

void MixedPrecisionPolicy::set_loss_scaler(const LossScaler& scaler) {
  if (scaler.enabled() && !mixed()) {
    throw Error(ErrorCode::kInvalidArgument,
                "net: loss scaling needs a float16 or bfloat16 compute dtype; this net computes in float32");
  }
  loss_scaler_ = scaler;
}

bool MixedPrecisionPolicy::apply_update(const std::function<bool()>& gradients_finite) {
  if (!loss_scaler_.enabled()) return true;
  return loss_scaler_.update(gradients_finite());
}

bool MixedPrecisionPolicy::update_on_store_allowed(bool update_on_store, bool chosen_by_default,
                                                   bool store_initialized) const {
  if (!update_on_store || !loss_scaler_.enabled()) return update_on_store;
  if (chosen_by_default && !store_initialized) return false;
  throw Error(ErrorCode::kNotSupported,
              "trainer: dynamic loss scaling (float16 mixed precision) needs the update on the workers: with "
              "update_on_kvstore the store applies the gradients before the workers could agree to skip an "
              "overflowed step; create the trainer with update_on_kvstore = 0");
}

}  // namespace dt::nn
