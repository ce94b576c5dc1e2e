// The names of optimizer state, read in one place. Optimizer::state names a
// key's arrays "<key>.<slot>" (slot: step, mom, mean, var, weight32); a
// parameter server names a part's "<key>/<begin>/<end>.<slot>". Next to
// them stand "num_update" and "learning_rate", which callers check first.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dt::optim {

struct StateName {
  uint64_t key = 0;
  bool per_part = false;  // "<key>/<begin>/<end>.<slot>"
  int64_t begin = 0;
  int64_t end = 0;
  std::string slot;  // after the first dot
};

// nullopt unless name is one of the two forms: key, begin and end in plain
// decimal digits (a key of at most 20). key_too_large, when given, is set
// when the key has those digits but does not fit in 64 bits.
std::optional<StateName> parse_state_name(const std::string& name, bool* key_too_large = nullptr);

// "<key>/<begin>/<end>.<slot>".
std::string part_state_name(uint64_t key, int64_t begin, int64_t end, const std::string& slot);

}  // namespace dt::optim
