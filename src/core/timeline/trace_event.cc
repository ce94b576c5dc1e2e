#include "core/timeline/trace_event.h"

#include <cstring>

namespace dt::core::timeline {

void TraceEvent::set_name(std::string_view text) {
  size_t n = text.size() < kNameBytes - 1 ? text.size() : kNameBytes - 1;
  // A cut inside a multi-byte character would leave invalid UTF-8, which a
  // JSON parser refuses: back up to the character's first byte.
  if (n < text.size()) {
    while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  }
  std::memcpy(name, text.data(), n);
  name[n] = '\0';
}

}  // namespace dt::core::timeline
