#include "optim/sgd.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "optim/element_access.h"
#include "optim/update_scalars.h"
#if DT_WITH_CUDA
#include "optim/cuda/optimizer_kernels.h"
#endif

namespace dt::optim {

namespace {

double momentum_of(const OptimizerConfig& config) {
  return config.get_number("momentum", config.name() == "nag" ? 0.9 : 0.0);
}

std::vector<std::string> sgd_slots(const OptimizerConfig& config) {
  if (momentum_of(config) > 0.0) return {"mom"};
  return {};
}

// The rule's numbers in the compute type C (float, or double for float64
// weights). clip is +inf when clipping is off, which leaves every finite
// value (and NaN) unchanged without a branch in the loop.
template <typename C>
SgdScalars<C> scalars_of(const Optimizer::Step& step, double momentum) {
  return SgdScalars<C>{
      static_cast<C>(step.lr),
      static_cast<C>(step.wd),
      static_cast<C>(step.rescale_grad),
      step.clip_gradient > 0.0 ? static_cast<C>(step.clip_gradient) : std::numeric_limits<C>::infinity(),
      static_cast<C>(momentum),
  };
}

// The whole update in one pass on the CPU. s by value: a local copy that
// the weight and moment stores cannot alias, so its fields stay in registers.
template <typename Elem, SgdRule kRule>
void sgd_pass(const core::NDArray& weight, const core::NDArray& grad, const core::NDArray& mom_array,
              const core::NDArray& master_array, const SgdScalars<typename Elem::Compute> s) {
  using C = typename Elem::Compute;
  using S = typename Elem::Storage;
  const S* g_data = grad.data_as<S>();
  C* mom = kRule == SgdRule::kPlain ? nullptr : mom_array.data_as<C>();
  C* master = master_array.defined() ? master_array.data_as<C>() : nullptr;

  detail::update_elements<Elem>(weight.data_as<S>(), master, weight.size(), [&](size_t i, C w) {
    const C g = std::min(std::max(s.rescale * Elem::load(g_data[i]), -s.clip), s.clip) + s.wd * w;
    if constexpr (kRule == SgdRule::kPlain) {
      return w - s.lr * g;
    } else if constexpr (kRule == SgdRule::kMomentum) {
      const C m = s.momentum * mom[i] - s.lr * g;
      mom[i] = m;
      return w + m;
    } else {
      const C m = s.momentum * mom[i] + g;
      mom[i] = m;
      return w - s.lr * (g + s.momentum * m);
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
  const SgdRule rule = momentum_ == 0.0 ? SgdRule::kPlain : nesterov_ ? SgdRule::kNesterov : SgdRule::kMomentum;
  if (!weight.context()->is_cpu()) {
#if DT_WITH_CUDA
    // Optimizer::update admits only float32 without a master copy here.
    cuda::sgd_update(*weight.context(), rule, scalars_of<float>(step, momentum_), weight.data_as<float>(),
                     grad.data_as<float>(), mom.defined() ? mom.data_as<float>() : nullptr, weight.size());
    return;
#else
    throw core::Error(core::ErrorCode::kNotSupported, "sgd: this build has no CUDA for updates on " +
                                                          weight.context()->to_string());
#endif
  }
  detail::dispatch_weight_dtype(weight.dtype(), "sgd", [&](auto elem) {
    using Elem = decltype(elem);
    const auto s = scalars_of<typename Elem::Compute>(step, momentum_);
    switch (rule) {
      case SgdRule::kPlain: sgd_pass<Elem, SgdRule::kPlain>(weight, grad, mom, state.master, s); return;
      case SgdRule::kMomentum: sgd_pass<Elem, SgdRule::kMomentum>(weight, grad, mom, state.master, s); return;
      case SgdRule::kNesterov: sgd_pass<Elem, SgdRule::kNesterov>(weight, grad, mom, state.master, s); return;
    }
  });
}

}  // namespace dt::optim
