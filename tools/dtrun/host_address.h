// The IPv4 address by which other hosts reach this one.
#pragma once

#include <string>

namespace dt::dtrun {

// The address of `interface` (empty: the first non-loopback interface that is
// up; none: this host's name). Throws std::runtime_error when a named
// interface has no IPv4 address.
std::string host_address(const std::string& interface);

}  // namespace dt::dtrun
