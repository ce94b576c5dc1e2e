// The per-update numbers of the SGD and Adam rules, rounded once to the
// compute type C. The CPU loops (sgd.cc, adam.cc) and the GPU kernels
// (cuda/optimizer_kernels.h) take the very same struct, so both devices start
// every update from identical values and can only differ by kernel rounding.
#pragma once

namespace dt::optim {

enum class SgdRule { kPlain, kMomentum, kNesterov };

// clip is +inf when clipping is off (see sgd.h / adam.h for the rules).
template <typename C>
struct SgdScalars {
  C lr;
  C wd;
  C rescale;
  C clip;
  C momentum;
};

template <typename C>
struct AdamScalars {
  C lr_t;   // lr with the bias correction folded in
  C decay;  // 1 - lr * wd, for AdamW
  C wd;
  C rescale;
  C clip;
  C beta1;
  C beta2;
  C one_minus_beta1;
  C one_minus_beta2;
  C epsilon;
};

}  // namespace dt::optim
