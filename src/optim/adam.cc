#include "optim/adam.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "optim/element_access.h"
#include "optim/update_scalars.h"
#if DT_WITH_CUDA
#include "optim/cuda/optimizer_kernels.h"
#endif

namespace dt::optim {

namespace {

// The rule's numbers in the compute type C (float, or double for float64
// weights); clip is +inf when clipping is off.
template <typename C>
AdamScalars<C> scalars_of(const Optimizer::Step& step, double beta1, double beta2, double epsilon) {
  const double t = static_cast<double>(step.count);
  // Bias correction in double: 1 - beta^t loses digits in float for small t.
  const double coef1 = 1.0 - std::pow(beta1, t);
  const double coef2 = 1.0 - std::pow(beta2, t);
  return AdamScalars<C>{
      static_cast<C>(step.lr * std::sqrt(coef2) / coef1),
      static_cast<C>(1.0 - step.lr * step.wd),
      static_cast<C>(step.wd),
      static_cast<C>(step.rescale_grad),
      step.clip_gradient > 0.0 ? static_cast<C>(step.clip_gradient) : std::numeric_limits<C>::infinity(),
      static_cast<C>(beta1),
      static_cast<C>(beta2),
      static_cast<C>(1.0 - beta1),
      static_cast<C>(1.0 - beta2),
      static_cast<C>(epsilon),
  };
}

// The whole update in one pass over weight, gradient and both moments, on
// the CPU. s by value, as in sgd.cc: stores cannot alias a local copy.
template <typename Elem, bool kDecoupled>
void adam_pass(const core::NDArray& weight, const core::NDArray& grad, const core::NDArray& mean_array,
               const core::NDArray& var_array, const core::NDArray& master_array,
               const AdamScalars<typename Elem::Compute> s) {
  using C = typename Elem::Compute;
  using S = typename Elem::Storage;
  const S* g_data = grad.data_as<S>();
  C* mean = mean_array.data_as<C>();
  C* var = var_array.data_as<C>();
  C* master = master_array.defined() ? master_array.data_as<C>() : nullptr;

  detail::update_elements<Elem>(weight.data_as<S>(), master, weight.size(), [&](size_t i, C w) {
    C g = std::min(std::max(s.rescale * Elem::load(g_data[i]), -s.clip), s.clip);
    if constexpr (!kDecoupled) g += s.wd * w;
    const C m = s.beta1 * mean[i] + s.one_minus_beta1 * g;
    const C v = s.beta2 * var[i] + s.one_minus_beta2 * g * g;
    mean[i] = m;
    var[i] = v;
    const C adaptive = s.lr_t * m / (std::sqrt(v) + s.epsilon);
    if constexpr (kDecoupled) {
      return w * s.decay - adaptive;
    } else {
      return w - adaptive;
    }
  });
}

}  // namespace

Adam::Adam(const OptimizerConfig& config)
    : Optimizer(config, Defaults{0.001, config.name() == "adamw" ? 0.01 : 0.0}, {"mean", "var"}),
      beta1_(config.get_number("beta1", 0.9)),
      beta2_(config.get_number("beta2", 0.999)),
      epsilon_(config.get_number("epsilon", 1e-8)),
      decoupled_(config.name() == "adamw") {}

void Adam::apply(const core::NDArray& weight, const core::NDArray& grad, const KeyState& state,
                 const Step& step) const {
  const core::NDArray& mean = state.slots[0];
  const core::NDArray& var = state.slots[1];
  if (!weight.context()->is_cpu()) {
#if DT_WITH_CUDA
    // Optimizer::update admits only float32 without a master copy here.
    cuda::adam_update(*weight.context(), decoupled_, scalars_of<float>(step, beta1_, beta2_, epsilon_),
                      weight.data_as<float>(), grad.data_as<float>(), mean.data_as<float>(), var.data_as<float>(),
                      weight.size());
    return;
#else
    throw core::Error(core::ErrorCode::kNotSupported, config().name() + ": this build has no CUDA for updates on " +
                                                          weight.context()->to_string());
#endif
  }
  detail::dispatch_weight_dtype(weight.dtype(), config().name(), [&](auto elem) {
    using Elem = decltype(elem);
    const auto s = scalars_of<typename Elem::Compute>(step, beta1_, beta2_, epsilon_);
    if (decoupled_) {
      adam_pass<Elem, true>(weight, grad, mean, var, state.master, s);
    } else {
      adam_pass<Elem, false>(weight, grad, mean, var, state.master, s);
    }
  });
}

}  // namespace dt::optim
