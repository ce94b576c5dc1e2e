// splitmix64, the integer mixer behind every seeded stream of the library
// (initialisers, dropout masks). Callable from host and device code alike,
// so that a GPU kernel draws exactly the numbers the CPU loop draws.
#pragma once

#include <cstdint>

#include "core/host_device.h"

namespace dt::core {

// One step of splitmix64: advances state and returns a well-mixed word.
DT_HOST_DEVICE inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// splitmix64's output function on a value, without a state to advance.
DT_HOST_DEVICE inline uint64_t mix64(uint64_t value) { return splitmix64(value); }

}  // namespace dt::core
