// The integer mixing behind every seeded stream of the nn layer
// (initialisers, dropout masks): splitmix64 and FNV-1a, so that the same
// seed and parameter or layer name give the same numbers on every platform
// and standard library.
#pragma once

#include <cstdint>
#include <string>

namespace dt::nn::layers {

// One step of splitmix64: advances state and returns a well-mixed word.
inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// splitmix64's output function on a value, without a state to advance.
inline uint64_t mix64(uint64_t value) { return splitmix64(value); }

inline uint64_t fnv1a64(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace dt::nn::layers
