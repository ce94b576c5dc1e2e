// The integer mixing behind every seeded stream of the nn layer
// (initialisers, dropout masks): splitmix64 (core/splitmix64.h, shared with
// the GPU kernels) and FNV-1a, so that the same seed and parameter or layer
// name give the same numbers on every platform and standard library.
#pragma once

#include <cstdint>
#include <string>

#include "core/splitmix64.h"

namespace dt::nn::layers {

using core::mix64;
using core::splitmix64;

inline uint64_t fnv1a64(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace dt::nn::layers
