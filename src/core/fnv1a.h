// FNV-1a, 64 bits: a string hash that gives the same number on every
// platform, standard library and process (std::hash promises none of these),
// for names that every node must turn into the same number on its own:
// parameter and layer names seeding their streams, string keys of a kvstore.
#pragma once

#include <cstdint>
#include <string_view>

namespace dt::core {

inline uint64_t fnv1a64(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace dt::core
