// Helpers shared by the parameter-server unit tests.
#pragma once

#include <unistd.h>

#include <atomic>
#include <string>

namespace dt::ps::test {

// A URL no other test (or process) uses: transport + pid + counter.
inline std::string unique_url(const std::string& transport) {
  static std::atomic<int> counter{0};
  const std::string tag = std::to_string(::getpid()) + "-" + std::to_string(counter++);
  if (transport == "inproc") return "inproc://ps-test-" + tag;
  if (transport == "ipc") return "ipc:///tmp/dt-ps-test-" + tag + ".ipc";
  return "tcp://127.0.0.1:0";
}

}  // namespace dt::ps::test
