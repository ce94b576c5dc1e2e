#include "optim/sgd.h"

#include <algorithm>
#include <limits>

#include "optim/element_access.h"

namespace dt::optim {

namespace {

double momentum_of(const OptimizerConfig& config) {
  return config.get_number("momentum", config.name() == "nag" ? 0.9 : 0.0);
}

std::vector<std::string> sgd_slots(const OptimizerConfig& config) {
  if (momentum_of(config) > 0.0) return {"mom"};
  return {};
}

enum class Rule { kPlain, kMomentum, kNesterov };

// The whole update in one pass; C is the compute type (float, or double for
// float64 weights). clip is +inf when clipping is off, which leaves every
// finite value (and NaN) unchanged without a branch in the loop.
template <typename Elem, Rule kRule>
void sgd_pass(const core::NDArray& weight, const core::NDArray& grad, const core::NDArray& mom_array,
              const core::NDArray& master_array, const Optimizer::Step& step, double momentum_value) {
  using C = typename Elem::Compute;
  using S = typename Elem::Storage;
  const C lr = static_cast<C>(step.lr);
  const C wd = static_cast<C>(step.wd);
  const C rescale = static_cast<C>(step.rescale_grad);
  const C clip = step.clip_gradient > 0.0 ? static_cast<C>(step.clip_gradient) : std::numeric_limits<C>::infinity();
  const C momentum = static_cast<C>(momentum_value);
  const S* g_data = grad.data_as<S>();
  C* mom = kRule == Rule::kPlain ? nullptr : mom_array.data_as<C>();
  C* master = master_array.defined() ? master_array.data_as<C>() : nullptr;

  detail::update_elements<Elem>(weight.data_as<S>(), master, weight.size(), [&](size_t i, C w) {
    const C g = std::min(std::max(rescale * Elem::load(g_data[i]), -clip), clip) + wd * w;
    if constexpr (kRule == Rule::kPlain) {
      return w - lr * g;
    } else if constexpr (kRule == Rule::kMomentum) {
      const C m = momentum * mom[i] - lr * g;
      mom[i] = m;
      return w + m;
    } else {
      const C m = momentum * mom[i] + g;
      mom[i] = m;
      return w - lr * (g + momentum * m);
    }
  });
}

}  // namespace

Sgd::Sgd(const OptimizerConfig& config)
    : Optimizer(config, Defaults{0.1, 0.0}, sgd_slots(config)),
      momentum_(momentum_of(config)),
      nesterov_(config.name() == "nag" || config.get_bool("nesterov", false)) {}

void Sgd::apply(const core::NDArray& weight, const core::NDArray& grad, const KeyState& state,
                const Step& step) const {
  const core::NDArray no_mom;
  const core::NDArray& mom = state.slots.empty() ? no_mom : state.slots[0];
  detail::dispatch_weight_dtype(weight.dtype(), "sgd", [&](auto elem) {
    using Elem = decltype(elem);
    if (momentum_ == 0.0) {
      sgd_pass<Elem, Rule::kPlain>(weight, grad, mom, state.master, step, momentum_);
    } else if (nesterov_) {
      sgd_pass<Elem, Rule::kNesterov>(weight, grad, mom, state.master, step, momentum_);
    } else {
      sgd_pass<Elem, Rule::kMomentum>(weight, grad, mom, state.master, step, momentum_);
    }
  });
}

}  // namespace dt::optim
