// The integer mixing behind every seeded stream of the nn layer
// (initialisers, dropout masks): splitmix64 (core/splitmix64.h, shared with
// the GPU kernels) and FNV-1a (core/fnv1a.h), so that the same seed and
// parameter or layer name give the same numbers on every platform and
// standard library.
#pragma once

#include "core/fnv1a.h"
#include "core/splitmix64.h"

namespace dt::nn::layers {

using core::fnv1a64;
using core::mix64;
using core::splitmix64;

}  // namespace dt::nn::layers
