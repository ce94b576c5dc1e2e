#include "optim/adam.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "optim/element_access.h"

namespace dt::optim {

namespace {

// The whole update in one pass over weight, gradient and both moments.
template <typename Elem, bool kDecoupled>
void adam_pass(const core::NDArray& weight, const core::NDArray& grad, const core::NDArray& mean_array,
               const core::NDArray& var_array, const core::NDArray& master_array, const Optimizer::Step& step,
               double beta1_value, double beta2_value, double epsilon_value) {
  using C = typename Elem::Compute;
  using S = typename Elem::Storage;
  const double t = static_cast<double>(step.count);
  // Bias correction in double: 1 - beta^t loses digits in float for small t.
  const double coef1 = 1.0 - std::pow(beta1_value, t);
  const double coef2 = 1.0 - std::pow(beta2_value, t);
  const C lr_t = static_cast<C>(step.lr * std::sqrt(coef2) / coef1);
  const C decay = static_cast<C>(1.0 - step.lr * step.wd);
  const C wd = static_cast<C>(step.wd);
  const C rescale = static_cast<C>(step.rescale_grad);
  const C clip = step.clip_gradient > 0.0 ? static_cast<C>(step.clip_gradient) : std::numeric_limits<C>::infinity();
  const C beta1 = static_cast<C>(beta1_value);
  const C beta2 = static_cast<C>(beta2_value);
  const C one_minus_beta1 = static_cast<C>(1.0 - beta1_value);
  const C one_minus_beta2 = static_cast<C>(1.0 - beta2_value);
  const C epsilon = static_cast<C>(epsilon_value);
  const S* g_data = grad.data_as<S>();
  C* mean = mean_array.data_as<C>();
  C* var = var_array.data_as<C>();
  C* master = master_array.defined() ? master_array.data_as<C>() : nullptr;

  detail::update_elements<Elem>(weight.data_as<S>(), master, weight.size(), [&](size_t i, C w) {
    C g = std::min(std::max(rescale * Elem::load(g_data[i]), -clip), clip);
    if constexpr (!kDecoupled) g += wd * w;
    const C m = beta1 * mean[i] + one_minus_beta1 * g;
    const C v = beta2 * var[i] + one_minus_beta2 * g * g;
    mean[i] = m;
    var[i] = v;
    const C adaptive = lr_t * m / (std::sqrt(v) + epsilon);
    if constexpr (kDecoupled) {
      return w * decay - adaptive;
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
  detail::dispatch_weight_dtype(weight.dtype(), config().name(), [&](auto elem) {
    using Elem = decltype(elem);
    if (decoupled_) {
      adam_pass<Elem, true>(weight, grad, state.slots[0], state.slots[1], state.master, step, beta1_, beta2_,
                            epsilon_);
    } else {
      adam_pass<Elem, false>(weight, grad, state.slots[0], state.slots[1], state.master, step, beta1_, beta2_,
                             epsilon_);
    }
  });
}

}  // namespace dt::optim
