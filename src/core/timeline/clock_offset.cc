#include "core/timeline/clock_offset.h"

#include <fstream>

namespace dt::core::timeline {

std::string boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (!(in >> id)) return "";
  return id;
}

}  // namespace dt::core::timeline
