#include "optim/state_name.h"

#include <cerrno>
#include <cstdlib>

namespace dt::optim {

namespace {

bool is_digits(const std::string& text, size_t max_digits) {
  return !text.empty() && text.size() <= max_digits && text.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

std::optional<StateName> parse_state_name(const std::string& name, bool* key_too_large) {
  if (key_too_large != nullptr) *key_too_large = false;
  const size_t dot = name.find('.');
  if (dot == std::string::npos) return std::nullopt;
  StateName out;
  out.slot = name.substr(dot + 1);
  std::string key_text = name.substr(0, dot);
  const size_t slash1 = key_text.find('/');
  if (slash1 != std::string::npos) {
    const size_t slash2 = key_text.find('/', slash1 + 1);
    if (slash2 == std::string::npos) return std::nullopt;
    const std::string begin = key_text.substr(slash1 + 1, slash2 - slash1 - 1);
    const std::string end = key_text.substr(slash2 + 1);
    // 18 digits always fit in int64_t.
    if (!is_digits(begin, 18) || !is_digits(end, 18)) return std::nullopt;
    out.per_part = true;
    out.begin = std::strtoll(begin.c_str(), nullptr, 10);
    out.end = std::strtoll(end.c_str(), nullptr, 10);
    key_text.resize(slash1);
  }
  if (!is_digits(key_text, 20)) return std::nullopt;
  errno = 0;
  const unsigned long long key = std::strtoull(key_text.c_str(), nullptr, 10);
  if (errno == ERANGE) {
    if (key_too_large != nullptr) *key_too_large = true;
    return std::nullopt;
  }
  out.key = static_cast<uint64_t>(key);
  return out;
}

std::string part_state_name(uint64_t key, int64_t begin, int64_t end, const std::string& slot) {
  return std::to_string(key) + "/" + std::to_string(begin) + "/" + std::to_string(end) + "." + slot;
}

}  // namespace dt::optim
