// How a parameter is filled by Net::initialize: declarative (a kind and its
// numbers), seeded, and reproducible: the same seed and parameter name give
// the same values on every run and platform.
#pragma once

#include <cstdint>
#include <string>

#include "core/ndarray.h"

namespace dt::nn {

struct Initializer {
  enum class Kind {
    kZeros,
    kOnes,
    kConstant,        // value
    kUniform,         // U(-scale, scale)
    kNormal,          // N(0, scale^2)
    kXavierUniform,   // Glorot: U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out))
    kXavierNormal,    // N(0, gain^2 * 2 / (fan_in + fan_out))
    kKaimingUniform,  // He: U(-a, a), a = gain * sqrt(3 / fan_in), gain = sqrt(2) for ReLU
    kKaimingNormal,   // N(0, gain^2 / fan_in)
  };
  Kind kind = Kind::kZeros;
  double value = 0.0;  // kConstant
  double scale = 1.0;  // kUniform, kNormal
  double gain = 1.0;   // Xavier and Kaiming

  // Fills a CPU float32 array. fan_in/fan_out follow PyTorch's rule for the
  // shape: dim 1 * receptive field / dim 0 * receptive field. The stream of
  // random numbers is derived from (seed, name) alone, so adding a layer
  // does not change the initial values of the others.
  void fill(const core::NDArray& array, uint64_t seed, const std::string& name) const;

  // "xavier_uniform", "kaiming_normal", ... and back; unknown names are
  // Error(kInvalidArgument) listing the known ones.
  static const char* kind_name(Kind kind);
  static Kind kind_from_name(const std::string& name);
};

}  // namespace dt::nn
